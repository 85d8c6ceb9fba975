// IAM's resource wildcard, for tests that check keys against the synthesized grants.

/** Whether `key` matches an IAM resource pattern: `*` matches any run of characters, `/` included. */
export const iamMatch = (pattern: string, key: string): boolean =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  ).test(key);
