// The snowflake peers without type declarations (benchmark only).
declare module 'flake-idgen' {
  export default class FlakeId {
    constructor(o?: { id?: number; epoch?: number });
    next(): Buffer;
  }
}
declare module 'snowflake-id' {
  const SnowflakeId: unknown;
  export default SnowflakeId;
}
declare module 'simpleflakes' {
  const simpleflakes: unknown;
  export default simpleflakes;
}
