// What a row's ground truth says about tool use beyond the answer: `{"need_tool": bool}` or `{"tools": [names]}`
// (the ToolRL seed's fields); rewards that pay for calling (or not calling) read it here.

/** Whether the task needs a tool call: the ground truth's `need_tool`, else whether it lists `tools`, else `fallback`. */
export function callExpected(groundTruth: unknown, fallback: boolean): boolean {
  if (typeof groundTruth !== 'object' || groundTruth === null || Array.isArray(groundTruth)) return fallback;
  const gt = groundTruth as Record<string, unknown>;
  if (typeof gt.need_tool === 'boolean') return gt.need_tool;
  if (Array.isArray(gt.tools)) return gt.tools.length > 0;
  return fallback;
}
