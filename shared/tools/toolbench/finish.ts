// ToolBench's `Finish` function: how a ToolBench episode ends, with an answer or by giving up. Defined here once:
// the dataset converter writes this schema into rows, and the toolbench tool kind runs it.
import type { ToolSchema } from '#shared/schemas/chat';
import type { Tool } from '../types.ts';
import { ToolFailure } from '../types.ts';

export const FINISH_SCHEMA: ToolSchema = {
  type: 'function',
  function: {
    name: 'Finish',
    description:
      'Call this when you are done: with return_type "give_answer" and a final_answer that fully answers the task, or with return_type "give_up_and_restart" if the task cannot be solved from here. Always end with this call; only final_answer is shown to the user.',
    parameters: {
      type: 'object',
      properties: {
        // ToolBench's two ways to end, and the ToolBench seed's spelling of giving up
        return_type: { type: 'string', enum: ['give_answer', 'give_up_and_restart', 'give_up'] },
        final_answer: {
          type: 'string',
          description: 'The answer for the user; required when return_type is "give_answer".',
        },
      },
      required: ['return_type'],
    },
  },
};

export const finishTool: Tool = {
  schema: FINISH_SCHEMA,
  async execute(args) {
    if (args.return_type === 'give_up_and_restart' || args.return_type === 'give_up')
      return JSON.stringify({ response: 'chose to give up and restart' });
    if (typeof args.final_answer !== 'string' || args.final_answer.trim() === '')
      throw new ToolFailure(
        'invalid_arguments',
        'Finish with return_type "give_answer" needs a non-empty "final_answer"',
      );
    return JSON.stringify({ response: 'successfully giving the final answer.' });
  },
};
