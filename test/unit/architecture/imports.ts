// Reads the import graph of the repository's TypeScript with the compiler's own parser (static imports,
// re-exports, `import type`, `import('x')` calls and `import('x').T` types), and the layer table of ARCHITECTURE.md,
// so the layering test checks the code against the one declaration a contributor reads.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface ImportEdge {
  /** Repository-relative path of the importing file. */
  readonly from: string;
  /** Repository-relative path of the imported file or folder (extension as written); null for a package. */
  readonly to: string | null;
  /** The specifier as written (for a computed `import()`, its source text). */
  readonly specifier: string;
  readonly kind: 'static' | 'dynamic' | 'type';
  /** A dynamic import whose specifier is computed at run time (a plugin or handler loaded by path). */
  readonly computed: boolean;
}

const SKIP = new Set(['node_modules', 'python', '.venv', 'json']);

export function typescriptFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (!SKIP.has(e.name) && !e.name.startsWith('.')) walk(join(d, e.name));
      } else if (/\.(ts|mts|tsx)$/.test(e.name) && !e.name.endsWith('.d.ts'))
        out.push(relative(root, join(d, e.name)));
    }
  };
  walk(join(root, dir));
  return out.sort();
}

/** package.json `imports` aliases (`#shared/*` -> `./shared/*.ts`), resolved to repository paths. */
function resolveSpecifier(root: string, from: string, spec: string): string | null {
  if (spec.startsWith('#shared/')) return `shared/${spec.slice('#shared/'.length)}`;
  if (spec.startsWith('#functions/')) return `functions/${spec.slice('#functions/'.length)}`;
  if (spec.startsWith('.')) return relative(root, resolve(root, dirname(from), spec));
  return null;
}

export function importsOf(root: string, file: string): ImportEdge[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const edges: ImportEdge[] = [];
  const add = (spec: string, kind: ImportEdge['kind'], computed = false) =>
    edges.push({
      from: file,
      to: computed ? null : resolveSpecifier(root, file, spec),
      specifier: spec,
      kind,
      computed,
    });
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.importClause?.isTypeOnly ? 'type' : 'static');
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly ? 'type' : 'static');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)))
        add(arg.text, 'dynamic');
      else if (arg) add(arg.getText(source), 'dynamic', true);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal.text, 'type');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

export interface LayerRow {
  readonly rank: number;
  readonly name: string;
  /** Units of this layer in the order the table lists them (`schemas/`, `topology.ts`, `adapters/aws/`). */
  readonly units: readonly string[];
}

/**
 * The rows of the table under "## Layers of `shared/`" in ARCHITECTURE.md. Units are the backticked paths of
 * the "folders" column, outside parentheses, that lie under shared/ (entry points outside shared/ are named after "outside").
 */
export function layerTable(markdown: string): LayerRow[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Layers of `shared/`'));
  if (!section) throw new Error('ARCHITECTURE.md has no "## Layers of `shared/`" section');
  const rows: LayerRow[] = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || !/^\d+$/.test(cells[1] ?? '')) continue;
    // Parentheses describe a folder; what they name is not a unit.
    const folders = ((cells[3] ?? '').split(/outside/)[0] ?? '').replace(/\([^)]*\)/g, '');
    const units = [...folders.matchAll(/`([^`]+)`/g)].map((m) => (m[1] as string).replace(/^shared\//, ''));
    rows.push({ rank: Number(cells[1]), name: cells[2] as string, units });
  }
  return rows;
}
