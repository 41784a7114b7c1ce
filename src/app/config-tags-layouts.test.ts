import { describe, expect, it } from 'vitest';
import { TAG_RULE } from '../core/tag.js';
import { ConfigError, resolveConfig } from './config.js';
import { DISCORD } from '../../test/helpers/discord.js';

function problems(flags: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    resolveConfig(flags, env, undefined);
    return [];
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
}

describe('the tag rule in the configuration', () => {
  it("strict tags and client-token tags take Leaf's order:pay; a bad one names the one rule", () => {
    expect(resolveConfig({ strictTags: 'order:pay,a.b' }, {}, undefined).strictTags).toEqual(['order:pay', 'a.b']);
    const tokens = JSON.stringify([{ token: 'x'.repeat(16), tags: ['order:pay', '*'] }]);
    expect(resolveConfig({ clientTokens: tokens }, {}, undefined).clientTokens).toEqual([
      { token: 'x'.repeat(16), tags: ['order:pay', '*'] },
    ]);
    expect(problems({ strictTags: 'bad tag' })).toEqual([`strictTags (from --strict-tags): each tag ${TAG_RULE}, got "bad tag"`]);
    expect(problems({ clientTokens: JSON.stringify([{ token: 'x'.repeat(16), tags: ['a/b'] }]) })[0]).toContain(TAG_RULE);
  });
});

describe('layouts in the configuration', () => {
  it('from the environment as JSON, and the default layout may be one of them', () => {
    const c = resolveConfig({ snowflakeLayout: 'discord' }, { SEQUOIA_LAYOUTS: JSON.stringify({ discord: DISCORD }) }, undefined);
    expect(c.layouts).toEqual({ discord: DISCORD });
    expect(c.snowflakeLayout).toBe('discord');
  });

  it('a default layout that is neither a preset nor configured is refused, naming both', () => {
    expect(problems({ snowflakeLayout: 'discord' })).toEqual([
      'snowflakeLayout: no layout "discord"; known: twitter, leaf, sonyflake, uid-generator, instagram, customuuid, simpleflake',
    ]);
  });

  it('each bad layout is named with every problem', () => {
    const p = problems({ layouts: JSON.stringify({ a: { ...DISCORD, timeBits: 0 }, b: 7 }) });
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(
      /^layouts \(from --layouts\): layout "a": timeBits must be an integer from 1 to 53; .*layout "b": must be an object/,
    );
    expect(problems({ layouts: '[1]' })[0]).toMatch(/^layouts \(from --layouts\): must be a JSON object of name → layout/);
  });
});
