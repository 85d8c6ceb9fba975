// One version per package family in the lock. Powertools releases all its packages under one version and they share
// `commons`: two versions put two copies of it in every Lambda bundle. The AWS SDK v3 clients come from one release
// train too (one version number per release), but a release publishes only the clients it changed, so client-batch
// may lack a version client-s3 has: the clients are pinned to the newest version every one of them is published at
// (`npm view @aws-sdk/client-<name> versions`), and what they share (@aws-sdk/core, the middleware, @smithy/*) must
// be one copy. Pins in package.json are exact, as Renovate keeps them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

/** A family: its packages are released together under one version number. */
const FAMILIES: readonly { name: string; test: (pkg: string) => boolean; fix: string }[] = [
  {
    name: 'Powertools for AWS Lambda',
    test: (p) => p.startsWith('@aws-lambda-powertools/'),
    fix: 'pin them to one with npm install --save-exact',
  },
  {
    name: 'AWS SDK v3 clients',
    test: (p) => p.startsWith('@aws-sdk/client-'),
    fix: 'pin them with npm install --save-exact to the newest version every client is published at',
  },
];

/** Packages of which one copy must be installed: what the AWS SDK v3 clients share. */
const SINGLE_COPY = (pkg: string) =>
  (pkg.startsWith('@aws-sdk/') && !pkg.startsWith('@aws-sdk/client-')) || pkg.startsWith('@smithy/');

interface LockFile {
  packages: Record<string, { version?: string; dev?: boolean }>;
}

/** Every (package, version) the lock installs, nested copies included. */
function installed(lock: LockFile): { pkg: string; version: string; path: string }[] {
  return Object.entries(lock.packages)
    .filter(([path, info]) => path.includes('node_modules/') && info.version)
    .map(([path, info]) => ({
      pkg: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length),
      version: info.version as string,
      path,
    }));
}

/** The families with more than one version, each version naming the packages at it. */
function familyVersionConflicts(lock: LockFile): string[] {
  const problems: string[] = [];
  for (const family of FAMILIES) {
    const byVersion = new Map<string, Set<string>>();
    for (const { pkg, version } of installed(lock).filter((i) => family.test(i.pkg)))
      byVersion.set(version, (byVersion.get(version) ?? new Set()).add(pkg));
    if (byVersion.size > 1)
      problems.push(
        `${family.name} at ${byVersion.size} versions: ` +
          [...byVersion].map(([v, pkgs]) => `${v} (${[...pkgs].sort().join(', ')})`).join('; ') +
          `; ${family.fix}`,
      );
  }
  const copies = new Map<string, Set<string>>();
  for (const { pkg, version } of installed(lock).filter((i) => SINGLE_COPY(i.pkg)))
    copies.set(pkg, (copies.get(pkg) ?? new Set()).add(version));
  for (const [pkg, versions] of copies)
    if (versions.size > 1)
      problems.push(
        `${pkg} at ${versions.size} versions (${[...versions].sort().join(', ')}): the AWS SDK clients disagree on a ` +
          'package they share; move them to releases that use one',
      );
  return problems;
}

describe('package-lock.json', () => {
  it('has one version of each package family', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as LockFile;
    const problems = familyVersionConflicts(lock);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('pins every dependency to an exact version', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string>
    >;
    const loose = Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })
      .filter(([, range]) => !/^\d+\.\d+\.\d+$/.test(range))
      .map(([name, range]) => `${name}@${range}`);
    expect(loose, 'use npm install --save-exact').toEqual([]);
  });

  it('names the family, the versions and the packages at each when they differ', () => {
    const lock: LockFile = {
      packages: {
        '': {},
        'node_modules/@aws-lambda-powertools/batch': { version: '2.35.0' },
        'node_modules/@aws-lambda-powertools/commons': { version: '2.36.0' },
        'node_modules/@aws-lambda-powertools/batch/node_modules/@aws-lambda-powertools/commons': {
          version: '2.35.0',
        },
        'node_modules/@aws-sdk/client-s3': { version: '3.1169.0' },
        'node_modules/@aws-sdk/client-batch': { version: '3.1138.0' },
        'node_modules/@aws-sdk/core': { version: '3.900.0' },
        'node_modules/@aws-sdk/client-batch/node_modules/@aws-sdk/core': { version: '3.899.0' },
      },
    };
    expect(familyVersionConflicts(lock)).toEqual([
      'Powertools for AWS Lambda at 2 versions: 2.35.0 (@aws-lambda-powertools/batch, @aws-lambda-powertools/commons); ' +
        '2.36.0 (@aws-lambda-powertools/commons); pin them to one with npm install --save-exact',
      'AWS SDK v3 clients at 2 versions: 3.1169.0 (@aws-sdk/client-s3); 3.1138.0 (@aws-sdk/client-batch); pin them ' +
        'with npm install --save-exact to the newest version every client is published at',
      '@aws-sdk/core at 2 versions (3.899.0, 3.900.0): the AWS SDK clients disagree on a package they share; move ' +
        'them to releases that use one',
    ]);
  });
});
