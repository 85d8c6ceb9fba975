// The key layout and id formats are `{name}` templates shared with the learner (json/constants.json): filled,
// matched and parsed here as the stages use them.
import { describe, expect, it } from 'vitest';
import { trainIds, valGroupIdPrefix, valGroupVersion, valIds } from '#shared/schemas/messages/group-ref';
import { parseInputKey } from '#shared/schemas/messages/run-event';
import { fill, folderOf, keyWildcard, placeholders, templatePattern } from '#shared/templates';
import { KEY_TEMPLATES, keys } from '#shared/topology';
import { iamMatch } from '../../helpers/iam.ts';

describe('templates', () => {
  it('fills every placeholder and refuses a missing one', () => {
    expect(fill('runs/{runId}/policy/v{version}/', { runId: 'r', version: 3 })).toBe('runs/r/policy/v3/');
    expect(() => fill('runs/{runId}/groups/{groupId}.json', { runId: 'r' })).toThrow(
      /no value for \{groupId\}/,
    );
    expect(placeholders(KEY_TEMPLATES.trajectory)).toEqual(['runId', 'groupId', 'sampleIndex']);
  });

  it('matches only whole strings of the template', () => {
    const p = templatePattern('runs/{runId}/groups/{groupId}.json');
    expect(p.exec('runs/r-1/groups/e0-p3.json')?.groups).toEqual({ runId: 'r-1', groupId: 'e0-p3' });
    expect(p.test('runs/r-1/groups/e0-p3.jsonl')).toBe(false);
    expect(p.test('runs/r-1/groupsXe0-p3.json')).toBe(false);
  });

  it('gives the folder that holds a kind of key', () => {
    expect(folderOf(KEY_TEMPLATES.group, 'groupId')).toBe('runs/{runId}/groups/');
    expect(folderOf(KEY_TEMPLATES.trajectory, 'groupId')).toBe('runs/{runId}/trajectories/');
    expect(folderOf(KEY_TEMPLATES.evalSummary, 'version')).toBe('runs/{runId}/metrics/eval/');
    expect(folderOf(KEY_TEMPLATES.runPrefix, 'runId')).toBe('runs/');
    expect(folderOf(KEY_TEMPLATES.feederState)).toBe('runs/{runId}/feeder/');
    expect(folderOf(KEY_TEMPLATES.deadLetters)).toBe('runs/{runId}/dead-letters/');
    expect(() => folderOf(KEY_TEMPLATES.runJson, 'groupId')).toThrow(/has no \{groupId\}/);
  });

  it('turns a template into an IAM pattern that matches every key made of it', () => {
    expect(keyWildcard(KEY_TEMPLATES.runJson)).toBe('runs/*/run.json');
    expect(keyWildcard(KEY_TEMPLATES.inputPrefix)).toBe('runs/*/input/*');
    expect(keyWildcard(folderOf(KEY_TEMPLATES.claimCheck, 'id'))).toBe('runs/*/messages/*');
    const made: [string, string][] = [
      [KEY_TEMPLATES.runJson, keys.runJson('r.1')],
      [KEY_TEMPLATES.inputPrefix, `${keys.inputPrefix('r')}data/train.parquet`],
      [KEY_TEMPLATES.trajectory, keys.trajectory('r', 'val-v3-p1', 4)],
      [KEY_TEMPLATES.deadLetter, keys.deadLetter('r', 's1-e0-p2', 'tool-call', 'a/b')],
      [
        KEY_TEMPLATES.checkpointRevision,
        `${fill(KEY_TEMPLATES.checkpointRevision, { runId: 'r', step: 3, revision: 1 })}model/w`,
      ],
    ];
    for (const [template, key] of made) expect(iamMatch(keyWildcard(template), key)).toBe(true);
    expect(iamMatch(keyWildcard(KEY_TEMPLATES.runJson), 'runs/r/input/run.json.parquet')).toBe(false);
    expect(iamMatch(keyWildcard(folderOf(KEY_TEMPLATES.group, 'groupId')), keys.groupSent('r', 'g'))).toBe(
      false,
    );
  });
});

describe('the key layout', () => {
  it('is the documented one, groups-sent markers included', () => {
    expect(keys.trajectory('r', 'e0-p1', 2)).toBe('runs/r/trajectories/e0-p1/2.json');
    expect(keys.groupSent('r', 'e0-p1')).toBe('runs/r/groups-sent/e0-p1');
    expect(keys.checkpoint('r', 7)).toBe('runs/r/checkpoints/step-7/');
    expect(fill(KEY_TEMPLATES.checkpointRevision, { runId: 'r', step: 7, revision: 2 })).toBe(
      'runs/r/checkpoints/step-7-r2/',
    );
    expect(keys.evalSummary('r', 4)).toBe('runs/r/metrics/eval/v4.json');
  });

  it('reads input keys back, nested files included', () => {
    expect(parseInputKey('runs/r-1/input/data/train.parquet')).toEqual({
      runId: 'r-1',
      file: 'data/train.parquet',
    });
    expect(parseInputKey('runs/r-1/policy/LATEST.json')).toBeUndefined();
  });
});

describe('group ids', () => {
  it('scope train ids by curriculum stage and validation ids by policy version', () => {
    expect(trainIds(null, 2, 17)).toEqual({ groupId: 'e2-p17', promptId: 'p17' });
    expect(trainIds(1, 0, 5)).toEqual({ groupId: 's1-e0-p5', promptId: 's1-p5' });
    expect(valIds(3, 9)).toEqual({ groupId: 'val-v3-p9', promptId: 'val-p9' });
  });

  it('give a validation group its version back, and a prefix no other version shares', () => {
    expect(valGroupVersion('val-v12-p0')).toBe(12);
    expect(valGroupVersion('e0-p1')).toBeUndefined();
    expect(valGroupVersion('val-vX-p1')).toBeUndefined();
    expect(valGroupIdPrefix(3)).toBe('val-v3-p');
    expect(valIds(30, 0).groupId.startsWith(valGroupIdPrefix(3))).toBe(false);
  });
});
