// Where a dotted path leads in the run-config schema: what command-line overrides and alias resolution check
// a key against (an unknown key is named with the keys that do exist there).
import { RunConfigSchema } from '#shared/schemas/config/run';

interface ZodLike {
  _zod: { def: Record<string, unknown> & { type: string } };
}

const def = (s: ZodLike) => s._zod.def;

/** The schema under wrappers that do not change what a value must be (optional, default, nullable, refine…). */
function unwrap(s: ZodLike): ZodLike {
  let cur = s;
  for (;;) {
    const d = def(cur);
    if (['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch', 'nonoptional'].includes(d.type))
      cur = d.innerType as ZodLike;
    else if (d.type === 'pipe') cur = (def(d.in as ZodLike).type === 'transform' ? d.out : d.in) as ZodLike;
    else return cur;
  }
}

type Found = { ok: true; leaf: ZodLike | null } | { ok: false; at: string; known: string[] };

/** The schema at a dotted path (null where the config is open: a record, a tool or reward's own config). */
export function schemaAt(path: string): Found {
  let cur: ZodLike | null = RunConfigSchema as unknown as ZodLike;
  const segs = path.split('.');
  for (let i = 0; i < segs.length; i++) {
    if (cur === null) return { ok: true, leaf: null };
    const seg = segs[i]!;
    const s = unwrap(cur);
    const d = def(s);
    if (d.type === 'object') {
      const shape = d.shape as Record<string, ZodLike>;
      if (!(seg in shape)) return { ok: false, at: segs.slice(0, i).join('.'), known: Object.keys(shape) };
      cur = shape[seg]!;
    } else if (d.type === 'record' || d.type === 'unknown' || d.type === 'any') cur = null;
    else if (d.type === 'array' && /^\d+$/.test(seg)) cur = d.element as ZodLike;
    else if (d.type === 'union') {
      const options = (d.options as ZodLike[]).map(unwrap);
      const next = options.find((o) => ['object', 'record', 'array'].includes(def(o).type));
      if (!next) return { ok: false, at: segs.slice(0, i).join('.'), known: [] };
      cur = next;
      i--; // descend into the chosen option with the same segment
    } else return { ok: false, at: segs.slice(0, i).join('.'), known: [] };
  }
  return { ok: true, leaf: cur };
}

/** Whether the schema at a path takes strings and not numbers or booleans (an id, a path, a name, an enum). */
export function wantsString(leaf: ZodLike | null): boolean {
  if (leaf === null) return false;
  const s = unwrap(leaf);
  const d = def(s);
  if (d.type === 'string' || d.type === 'enum') return true;
  if (d.type === 'literal') return (d.values as unknown[]).every((v) => typeof v === 'string');
  if (d.type === 'union') return (d.options as ZodLike[]).some((o) => wantsString(o));
  return false;
}
