import { Kind, visit, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';

/**
 * The cost caps of a GraphQL document (docs/api.md "GraphQL"), computed on the parsed
 * document before validation, whose cost grows with fields and fragments: fields, aliases,
 * directives, fragment spreads and depth over the document and each operation with its
 * fragments expanded, and the rules inside introspection (`__schema`, `__type`).
 */
/** Nesting depth of data fields. */
export const MAX_DEPTH = 8;
/**
 * Nesting depth under `__schema` and `__type`: the standard introspection query
 * (graphql's getIntrospectionQuery, 9 levels of `ofType`) is 15 deep. Introspection cannot
 * multiply at depth: its list fields nest at most twice (graphql's MaxIntrospectionDepthRule)
 * and aliases are refused inside it, so depth there only follows `ofType` chains.
 */
export const MAX_INTROSPECTION_DEPTH = 15;
/** Fields per operation with fragments expanded (and in the whole document), `__typename` included. */
export const MAX_FIELDS = 500;
export const MAX_ALIASES = 100;
export const MAX_DIRECTIVES = 50;
export const MAX_SPREADS = 500;
/** `__type` lookups per operation (aliases of it count). */
export const MAX_TYPE_LOOKUPS = 10;

/** The document's fragment definitions, by name (also used by graphql.ts's introspection check). */
export function fragments(doc: DocumentNode): Map<string, FragmentDefinitionNode> {
  const frags = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) frags.set(d.name.value, d);
  return frags;
}

/**
 * The caps of docs/api.md "GraphQL", checked before validation: over the whole document as
 * written, and over each operation with its fragments expanded (a fragment spread twice
 * counts twice), so neither validation nor execution sees more. Returns the reason, or null.
 */
export function limits(doc: DocumentNode): string | null {
  // The document as written: bounds validation, which also looks at unused definitions.
  let fields = 0;
  let aliases = 0;
  let directives = 0;
  visit(doc, {
    Field: (n) => {
      fields++;
      if (n.alias) aliases++;
    },
    Directive: () => {
      directives++;
    },
  });
  const over = tally(fields, aliases, directives, 0);
  if (over) return over;
  const frags = fragments(doc);
  for (const d of doc.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    const why = expanded(d, frags);
    if (why) return why;
  }
  return null;
}

function tally(fields: number, aliases: number, directives: number, spreads: number): string | null {
  if (fields > MAX_FIELDS) return `the query selects more than ${MAX_FIELDS} fields`;
  if (aliases > MAX_ALIASES) return `the query uses more than ${MAX_ALIASES} aliases`;
  if (directives > MAX_DIRECTIVES) return `the query uses more than ${MAX_DIRECTIVES} directives`;
  if (spreads > MAX_SPREADS) return `the query expands more than ${MAX_SPREADS} fragment spreads`;
  return null;
}

/** One operation with fragments expanded: the counts of `tally`, depth, and the introspection rules. */
function expanded(op: OperationDefinitionNode, frags: Map<string, FragmentDefinitionNode>): string | null {
  let fields = 0;
  let aliases = 0;
  let directives = op.directives?.length ?? 0;
  let spreads = 0;
  let typeLookups = 0;
  let why: string | null = null;
  // `intro`: inside __schema or __type, where the depth cap is MAX_INTROSPECTION_DEPTH and aliases are refused.
  const walk = (set: SelectionSetNode, depth: number, intro: boolean, seen: ReadonlySet<string>): void => {
    for (const sel of set.selections) {
      if (why) return;
      directives += sel.directives?.length ?? 0;
      if (sel.kind === Kind.FIELD) {
        fields++;
        const name = sel.name.value;
        if (sel.alias) {
          aliases++;
          if (intro) why = 'aliases are not allowed inside __schema or __type';
          else if (depth === 1 && name === '__schema') why = '__schema cannot be aliased; select it once';
        }
        if (depth === 1 && name === '__type' && ++typeLookups > MAX_TYPE_LOOKUPS) why = `the query selects __type more than ${MAX_TYPE_LOOKUPS} times`;
        why ??= tally(fields, aliases, directives, spreads);
        if (why || !sel.selectionSet) continue;
        const inner = intro || (depth === 1 && (name === '__schema' || name === '__type'));
        const cap = inner ? MAX_INTROSPECTION_DEPTH : MAX_DEPTH;
        if (depth + 1 > cap) why = `the query nests deeper than ${cap} levels`;
        else walk(sel.selectionSet, depth + 1, inner, seen);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, depth, intro, seen);
      else {
        spreads++;
        why = tally(fields, aliases, directives, spreads);
        const f = frags.get(sel.name.value);
        // note: an unknown or cyclic spread is left to validation, which names it.
        if (!why && f && !seen.has(f.name.value)) {
          directives += f.directives?.length ?? 0;
          walk(f.selectionSet, depth, intro, new Set([...seen, f.name.value]));
        }
      }
    }
  };
  walk(op.selectionSet, 1, false, new Set());
  return why ?? tally(fields, aliases, directives, spreads);
}
