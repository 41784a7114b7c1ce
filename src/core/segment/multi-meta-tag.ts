/**
 * The reserved tag in which each store of a multi-store set records its place
 * in the set. It is not a legal user tag (the tag rule has no ':'), so no
 * request can create, read or allocate it.
 */
export const MULTI_META_TAG = 'sequoia:multi';
