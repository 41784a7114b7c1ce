/** The kinds of primary key `sequoia bench pk` compares (the names alone, cheap to load for `--help`). */
export const PK_KIND_NAMES = ['sequence', 'segment', 'snowflake', 'uuidv7', 'uuidv4', 'uuidv4-text', 'ulid'] as const;
export type PkKindName = (typeof PK_KIND_NAMES)[number];
