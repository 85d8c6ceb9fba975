// Python types generated from the exported JSON Schemas (json-schemas.ts), so the learner reads the documents the
// zod schemas define as typed values: frozen dataclasses built from the JSON object (the run config's sections) or
// TypedDicts over the parsed JSON itself (the scored group). String enumerations become `Literal` aliases and the
// schemas' descriptions become docstrings. `npm run schemas:generate` writes the files; a unit test fails when a
// checked-in file differs from what this renders.
//
// Written here rather than with a JSON-Schema-to-Python tool (datamodel-code-generator): those emit pydantic models
// or a fixed dataclass style that does not build nested frozen dataclasses from the parsed JSON, and would add a
// Python tool to the TypeScript build that renders the schemas.
import { toJsonSchema } from './json-schemas.ts';
import { docstring, PY_KEYWORDS, pascal, pyLiteral, sameJson, WIDTH, wrap } from './python-text.ts';

type Node = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Node>;
  required?: string[];
  additionalProperties?: Node | boolean;
  items?: Node;
  anyOf?: Node[];
  enum?: unknown[];
  const?: unknown;
  not?: unknown;
  default?: unknown;
  description?: string;
  $defs?: Record<string, Node>;
};

export interface PythonModuleSpec {
  /** The exported schemas (json-schemas.ts EXPORTED) and their root class names, used where a root has no `$ref`. */
  schemas: { schema: string; root: string }[];
  /** dataclass: frozen dataclasses with `from_dict`; typeddict: TypedDicts over the JSON as parsed. */
  kind: 'dataclass' | 'typeddict';
  /** Class names of anonymous nested objects, by `Parent.property` (default: Parent + Property). */
  names?: Record<string, string>;
  /** The module docstring. */
  doc: string;
  /** The file, relative to the repository root. */
  path: string;
}

export const PYTHON_MODULES: PythonModuleSpec[] = [
  {
    schemas: [{ schema: 'run-config', root: 'RunConfig' }],
    kind: 'dataclass',
    path: 'gpu-worker/toolrl_learner/run_config.py',
    doc:
      'The run configuration as typed values: one frozen dataclass per section of shared/schemas/config/*.ts. Build ' +
      'with `RunConfig.from_dict(json)` from a config validated against run-config.schema.json (contracts.validate): ' +
      "absent keys take the schema's defaults, nested objects become their dataclasses and arrays tuples.",
  },
  {
    schemas: [
      { schema: 'scored-group', root: 'ScoredGroup' },
      { schema: 'scored-group-message', root: 'ScoredGroupMessage' },
    ],
    kind: 'typeddict',
    path: 'gpu-worker/toolrl_learner/scored_group.py',
    names: {
      'ScoredGroup.trajectories': 'Trajectory',
      'Trajectory.turns': 'Turn',
      'Trajectory.segments': 'Segment',
      'Trajectory.messages': 'Message',
      'Turn.toolCalls': 'ToolCall',
      'Turn.parseErrors': 'ParseError',
      'ToolCall.result': 'ToolResult',
      'ToolResultError.type': 'ToolErrorType',
      'Message.tool_calls': 'MessageToolCall',
      'MessageToolCall.function': 'MessageFunction',
      'Trajectory.rewardErrors': 'RewardError',
    },
    doc:
      "The scored group, the learner's input contract (shared/schemas/scored-group.ts), and the queue message that " +
      'points at it, as TypedDicts over the JSON. ' +
      "Keys are the wire's (camelCase, as the zod schema names them) so a group is the parsed JSON itself, with no " +
      'copy: `group_check.check_scored_group` validates it against the JSON Schema at the boundary and returns it ' +
      'under this type.',
  },
];

interface PyType {
  /** The annotation. */
  py: string;
  /** dataclass mode: a Python expression (a callable) converting the JSON value, when it needs converting. */
  conv?: string;
  /** The type is a float (its integer defaults are written as floats). */
  float?: boolean;
  /** An array: its default is written as a tuple (dataclass mode). */
  array?: boolean;
  /** A generated class: its object default is built with from_dict. */
  cls?: string;
}

class PythonEmitter {
  private defs: Record<string, Node> = {};
  private schema = '';
  private readonly aliases = new Map<string, string>();
  private readonly classes = new Map<string, string[]>();
  private readonly order: string[] = [];
  private readonly classNodes = new Map<string, Node>();

  constructor(private readonly spec: PythonModuleSpec) {}

  render(): string {
    for (const { schema: name, root } of this.spec.schemas) {
      const schema = toJsonSchema(name) as Node;
      this.schema = name;
      this.defs = schema.$defs ?? {};
      const top = schema.$ref ? this.deref(schema) : { node: schema, name: root };
      this.classFor(top.node, top.name);
    }
    const files = this.spec.schemas.map((x) => `shared/schemas/json/${x.schema}.schema.json`).join(' and ');
    const dc = this.spec.kind === 'dataclass';
    const typing = ['Any', ...(this.aliases.size || this.usesLiteral ? ['Literal'] : [])];
    if (!dc) typing.push(...(this.usesNotRequired ? ['NotRequired'] : []), 'TypedDict');
    const head = [
      ...wrap(
        `Generated by \`npm run schemas:generate\` (shared/codegen/python.ts) from ${files}, the JSON Schema of ` +
          'the zod schemas: do not edit. Change the zod schema and regenerate; a unit test ' +
          '(test/unit/schemas/contracts.test.ts) fails when this file and the schema differ.',
        WIDTH,
        '# ',
      ),
      ...docstring(this.spec.doc, ''),
      '',
      'from __future__ import annotations',
      '',
      ...(dc
        ? [
            'import dataclasses',
            'from collections.abc import Callable, Mapping',
            'from dataclasses import dataclass, field',
          ]
        : []),
      `from typing import ${typing.sort().join(', ')}`,
      '',
    ];
    const aliases = [...this.aliases.entries()].map(([name, values]) => {
      const one = `${name} = Literal[${values}]`;
      if (one.length <= WIDTH) return one;
      return [`${name} = Literal[`, ...values.split(', ').map((v) => `    ${v},`), ']'].join('\n');
    });
    const helper = dc
      ? [
          '',
          '',
          'def _fields(cls: Any, d: Mapping[str, Any], convert: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:',
          '    """The keyword arguments of dataclass `cls` from the JSON object `d`: its own keys (as zod, which strips',
          '    others), nested objects and arrays converted; absent keys are left to the defaults."""',
          '    names = {f.name for f in dataclasses.fields(cls)}',
          '    return {k: convert[k](v) if k in convert and v is not None else v for k, v in d.items() if k in names}',
        ]
      : [];
    const body = this.order.map((name) => ['', '', '', ...(this.classes.get(name) ?? [])].join('\n'));
    return `${[...head, ...aliases, ...helper].join('\n')}${body.join('')}\n`;
  }

  private usesLiteral = false;
  private usesNotRequired = false;

  private deref(node: Node): { node: Node; name: string } {
    const name = node.$ref?.replace(/^#\/\$defs\//, '') ?? '';
    const target = this.defs[name];
    if (!target) throw new Error(`${this.schema}: unresolved $ref ${node.$ref}`);
    return { node: target, name };
  }

  private alias(prop: string, owner: string, values: unknown[]): string {
    const text = values.map((v) => pyLiteral(v)).join(', ');
    const named = this.spec.names?.[`${owner}.${prop}`];
    for (const name of named ? [named] : [pascal(prop), `${owner}${pascal(prop)}`]) {
      const have = this.aliases.get(name);
      if (have === undefined || have === text) {
        this.aliases.set(name, text);
        return name;
      }
    }
    throw new Error(`${this.schema}: no free alias name for ${owner}.${prop}`);
  }

  /** The Python type of `node`, the value of `owner.prop`. */
  private typeOf(node: Node, owner: string, prop: string): PyType {
    const dc = this.spec.kind === 'dataclass';
    if (node.$ref) {
      const { node: target, name } = this.deref(node);
      if (target.properties) {
        this.classFor(target, name);
        return dc ? { py: name, conv: `${name}.from_dict`, cls: name } : { py: name, cls: name };
      }
      return this.typeOf(target, owner, prop);
    }
    if (node.enum?.every((v) => typeof v === 'string')) return { py: this.alias(prop, owner, node.enum) };
    if (node.const !== undefined) {
      this.usesLiteral = true;
      return { py: `Literal[${pyLiteral(node.const)}]` };
    }
    if (node.anyOf) {
      const nullable = node.anyOf.some((n) => n.type === 'null');
      const arms = node.anyOf.filter((n) => n.type !== 'null');
      let t: PyType;
      if (arms.length && arms.every((n) => typeof n.const === 'number' && Number.isInteger(n.const)))
        t = { py: 'int' };
      else if (arms.length && arms.every((n) => typeof n.const === 'string'))
        t = {
          py: this.alias(
            prop,
            owner,
            arms.map((n) => n.const),
          ),
        };
      else if (arms.length === 1 && arms[0]) t = this.typeOf(arms[0], owner, prop);
      else {
        const types = arms.map((n) => this.typeOf(n, owner, prop));
        const simple = types.every((x) => !x.cls);
        t = simple
          ? {
              py: [
                ...new Set(
                  types.map((x) =>
                    x.array && dc ? x.py.replace(/^tuple\[(.*), \.\.\.\]$/, 'list[$1]') : x.py,
                  ),
                ),
              ].join(' | '),
            }
          : { py: 'Any' };
      }
      return nullable && t.py !== 'Any' ? { ...t, py: `${t.py} | None` } : t;
    }
    if (Array.isArray(node.type)) {
      const arms = node.type.map((type) => this.typeOf({ ...node, type }, owner, prop));
      return arms.some((x) => x.cls || x.array) ? { py: 'Any' } : { py: arms.map((x) => x.py).join(' | ') };
    }
    switch (node.type) {
      case 'string':
        return { py: 'str' };
      case 'integer':
        return { py: 'int' };
      case 'number': // JSON writes 2.0 as 2: a float field holds a float
        return dc ? { py: 'float', float: true, conv: 'float' } : { py: 'float', float: true };
      case 'boolean':
        return { py: 'bool' };
      case 'null':
        return { py: 'None' };
      case 'array': {
        const item = node.items ? this.typeOf(node.items, owner, prop) : { py: 'Any' };
        if (!dc) return { py: `list[${item.py}]`, array: true };
        const conv = item.conv ? `lambda v: tuple(${item.conv}(x) for x in v)` : 'tuple';
        return { py: `tuple[${item.py}, ...]`, conv, array: true };
      }
      case 'object': {
        if (node.properties && Object.keys(node.properties).length) {
          const name = this.spec.names?.[`${owner}.${prop}`] ?? `${owner}${pascal(prop)}`;
          this.classFor(node, name);
          return dc ? { py: name, conv: `${name}.from_dict`, cls: name } : { py: name, cls: name };
        }
        const values = typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
        const v = values ? this.typeOf(values, owner, prop) : undefined;
        return { py: `dict[str, ${v && !v.cls && !v.conv ? v.py : 'Any'}]` };
      }
      default:
        return { py: 'Any' };
    }
  }

  private classFor(node: Node, name: string): void {
    if (this.classes.has(name)) return;
    this.classes.set(name, []);
    this.classNodes.set(name, node);
    const dc = this.spec.kind === 'dataclass';
    const required = new Set(node.required ?? []);
    const lines: string[] = dc
      ? ['@dataclass(frozen=True, kw_only=True)', `class ${name}:`]
      : [`class ${name}(TypedDict):`];
    if (node.description) lines.push(...docstring(node.description, '    '), '');
    const convert: string[] = [];
    const before: string[] = [];
    for (const [key, prop] of Object.entries(node.properties ?? {})) {
      if (prop.not !== undefined) continue; // a key the schema never allows (z.never())
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || PY_KEYWORDS.has(key))
        throw new Error(`${this.schema}: ${name}.${key} is not a Python identifier`);
      const t = this.typeOf(prop, name, key);
      const optional = !required.has(key);
      let line: string;
      if (!dc) {
        if (optional) this.usesNotRequired = true;
        const py = optional ? `NotRequired[${t.py}]` : t.py;
        if (prop.description) lines.push(...wrap(prop.description, WIDTH, '    # '));
        lines.push(`    ${key}: ${py}`);
        continue;
      }
      if (t.conv) convert.push(`            "${key}": ${t.conv},`);
      const head = `    ${key}: ${t.py}`;
      if (prop.default !== undefined) {
        const d = prop.default;
        if (t.cls && d !== null && typeof d === 'object') {
          const target = this.classNodes.get(t.cls);
          if (!target || !(sameJson(d, {}) || sameJson(d, this.defaults(target))))
            throw new Error(`${this.schema}: ${name}.${key}'s default is not its fields' defaults`);
          line = `${head} = field(default_factory=${t.cls})`;
        } else if (d !== null && typeof d === 'object' && !Array.isArray(d))
          line = sameJson(d, {})
            ? `${head} = field(default_factory=dict)`
            : `${head} = field(default_factory=lambda: ${pyLiteral(d)})`;
        else if (Array.isArray(d) && t.conv && t.conv !== 'tuple' && d.length) {
          // An array of objects: a module constant of their frozen dataclasses, defined before this class.
          const item = t.py.replace(/^tuple\[(.*), \.\.\.\]$/, '$1');
          const constant = `_${name}_${key}`.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
          const items = d.map((x) => `${item}.from_dict(${pyLiteral(x)})`);
          const one = `${constant} = (${items[0]},)`;
          // ruff keeps a one-item tuple on one line when it fits (its comma is not a magic trailing comma)
          if (items.length === 1 && one.length <= WIDTH) before.push(one, '', '');
          else before.push(`${constant} = (`, ...items.map((x) => `    ${x},`), ')', '', '');
          line = `${head} = ${constant}`;
        } else if (Array.isArray(d) && `${head} = ${pyLiteral(d, false, true)}`.length > WIDTH) {
          lines.push(`${head} = (`, ...d.map((x) => `        ${pyLiteral(x)},`), '    )');
          line = '';
        } else line = `${head} = ${pyLiteral(d, t.float, true)}`;
      } else if (optional)
        line = `${head}${t.py.endsWith('| None') || t.py === 'Any' ? '' : ' | None'} = None`;
      else line = head;
      if (line) lines.push(...this.fit(line));
      if (prop.description) lines.push(...docstring(prop.description, '    '));
    }
    if (dc) {
      lines.push(
        '',
        '    @classmethod',
        `    def from_dict(cls, d: Mapping[str, Any]) -> ${name}:`,
        ...(convert.length
          ? [
              '        convert: dict[str, Callable[[Any], Any]] = {',
              ...convert,
              '        }',
              '        return cls(**_fields(cls, d, convert))',
            ]
          : ['        return cls(**_fields(cls, d, {}))']),
      );
    }
    for (const l of before) this.fit(l);
    this.classes.set(name, [...before, ...lines]);
    this.order.push(name); // after the classes it names: a default_factory is evaluated with the class
  }

  /** A line past the width: an error, so the generated file stays as ruff format writes it. */
  private fit(line: string): string[] {
    if (line.length > WIDTH) throw new Error(`${this.schema}: generated line too long: ${line.trim()}`);
    return [line];
  }

  /** The object `node` with nothing given: its properties' defaults (what `from_dict({})` builds). */
  private defaults(node: Node): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [k, p] of Object.entries(node.properties ?? {}))
      if (p.default !== undefined) out[k] = p.default;
    return out;
  }
}

/** The Python module of one spec, as `npm run schemas:generate` writes it. */
export function renderPython(spec: PythonModuleSpec): string {
  return new PythonEmitter(spec).render();
}
