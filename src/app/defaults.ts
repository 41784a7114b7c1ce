/** Defaults the field table and the CLI's help both show; light, so the CLI can name them without loading the config schema. */
export const DEFAULT_STORE_URL = 'sqlite:./data/sequoia.db';
export const DEFAULT_STATE_DIR = './data';
