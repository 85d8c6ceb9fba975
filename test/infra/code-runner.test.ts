// The code runner: the function the tool-call stage invokes to run the code_interpreter's programs. Sandboxed code
// on Lambda can read the credentials of the process that runs it, so that process's role grants nothing but its own
// logs; the tool-call role may invoke exactly this function, and the variable naming it comes with that grant.
import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { FUNCTIONS, type FunctionName } from '#shared/topology';
import { CODE_RUNNER_SETTINGS } from '../../infra/lib/constructs/stage-functions.ts';
import { build } from './app.ts';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

function functionByDescription(t: Template, pattern: RegExp) {
  const found = Object.entries(t.findResources('AWS::Lambda::Function')).filter(([, r]) =>
    pattern.test(r.Properties.Description ?? ''),
  );
  if (found.length !== 1) throw new Error(`expected one function matching ${pattern}, found ${found.length}`);
  const [id, r] = found[0]!;
  return { id, props: r.Properties, roleId: r.Properties.Role['Fn::GetAtt'][0] as string };
}

const codeRunner = (t: Template) => functionByDescription(t, /^toolrl dev code-runner: /);
const stage = (t: Template, name: FunctionName) =>
  functionByDescription(t, new RegExp(`^toolrl dev ${name} stage$`));

/** Every statement of every policy attached to a role (inline, managed or attached later). */
function roleStatements(t: Template, roleId: string): Statement[] {
  const role = t.toJSON().Resources[roleId].Properties;
  const inline = (role.Policies ?? []).flatMap(
    (p: { PolicyDocument: { Statement: Statement[] } }) => p.PolicyDocument.Statement,
  );
  const attached = Object.values(t.findResources('AWS::IAM::Policy'))
    .filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
  const managed = Object.values(t.findResources('AWS::IAM::ManagedPolicy'))
    .filter((p) => JSON.stringify(p.Properties.Roles ?? []).includes(`"${roleId}"`))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
  return [...inline, ...attached, ...managed];
}

const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('code runner', () => {
  it("has a role that may only write to the runner's own log group", () => {
    // GIVEN the dev pipeline
    const { pipelineTemplate: t } = build();
    const runner = codeRunner(t);
    const role = t.toJSON().Resources[runner.roleId].Properties;
    // THEN no managed policy (AWSLambdaBasicExecutionRole would allow every log group) and only log-writing actions
    expect(role.ManagedPolicyArns).toBeUndefined();
    const statements = roleStatements(t, runner.roleId);
    expect(statements.length).toBeGreaterThan(0);
    expect(new Set(statements.flatMap(actions))).toEqual(
      new Set(['logs:CreateLogStream', 'logs:PutLogEvents']),
    );
    const group = runner.props.LoggingConfig.LogGroup.Ref as string;
    for (const s of statements) {
      expect(s.Effect).toBe('Allow');
      expect(s.Resource).toEqual({ 'Fn::GetAtt': [group, 'Arn'] });
    }
  });

  it('carries none of the pipeline in its environment and consumes no queue', () => {
    const { pipelineTemplate: t } = build();
    const runner = codeRunner(t);
    expect(runner.props.Environment.Variables).toEqual({ TOOLRL_ENV: 'dev' });
    expect(
      Object.values(t.findResources('AWS::Lambda::EventSourceMapping')).filter(
        (m) => m.Properties.FunctionName.Ref === runner.id,
      ),
    ).toEqual([]);
    // Nothing may invoke it through a resource policy either: only the tool-call role's own grant.
    expect(
      Object.values(t.findResources('AWS::Lambda::Permission')).filter((p) =>
        JSON.stringify(p.Properties.FunctionName).includes(`"${runner.id}"`),
      ),
    ).toEqual([]);
  });

  it('runs the tool-call image by its own command, sized to outlast the tool-call that waits on it', () => {
    const { pipelineTemplate: t } = build();
    const runner = codeRunner(t).props;
    expect(runner).toMatchObject({
      PackageType: 'Image',
      Architectures: ['x86_64'],
      ImageConfig: { Command: ['code-runner.handler'] },
      Timeout: CODE_RUNNER_SETTINGS.timeoutSec,
      MemorySize: CODE_RUNNER_SETTINGS.memoryMb,
    });
    expect(runner.Code.ImageUri).toEqual(stage(t, 'tool-call').props.Code.ImageUri);
    expect(CODE_RUNNER_SETTINGS.timeoutSec).toBeGreaterThanOrEqual(FUNCTIONS['tool-call'].timeoutSec);
  });

  it('is what the tool-call stage may invoke, exactly, and is named in its environment', () => {
    const { pipelineTemplate: t } = build();
    const runner = codeRunner(t);
    const toolCall = stage(t, 'tool-call');
    // THEN the grant: InvokeFunction on the runner's ARN (unqualified, so its $LATEST), nothing else of Lambda
    const lambdaStatements = roleStatements(t, toolCall.roleId).filter((s) =>
      actions(s).some((a) => a.startsWith('lambda:')),
    );
    expect(lambdaStatements).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: { 'Fn::GetAtt': [runner.id, 'Arn'] },
      }),
    ]);
    // AND the variable the code_interpreter reads names the same function
    expect(toolCall.props.Environment.Variables[FUNCTION_ENV.codeRunnerFunction]).toEqual({ Ref: runner.id });
    // AND no other stage may invoke functions or is told of the runner
    for (const name of Object.keys(FUNCTIONS) as FunctionName[]) {
      if (name === 'tool-call') continue;
      const fn = stage(t, name);
      expect(
        roleStatements(t, fn.roleId)
          .flatMap(actions)
          .filter((a) => a.startsWith('lambda:')),
        name,
      ).toEqual([]);
      expect(fn.props.Environment.Variables[FUNCTION_ENV.codeRunnerFunction], name).toBeUndefined();
    }
  });
});
