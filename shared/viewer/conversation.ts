// Where a trajectory's prompt ends in its messages, for the server (the table's prompt column) and the page (the
// conversation view) alike: no imports, so the page's bundle can take it.

interface Messages {
  readonly messages: readonly { readonly role: string; readonly content: string }[];
  readonly turns: readonly unknown[];
}

/**
 * How many of `messages` are the prompt: those before the first assistant message the policy sampled. A prompt may
 * hold assistant messages of its own (few-shot examples); the sampled ones are the last `turns.length`.
 */
export function promptLength(t: Messages): number {
  const assistant = t.messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
  const first = assistant[assistant.length - t.turns.length];
  return t.turns.length === 0 || first === undefined ? t.messages.length : first;
}

/** The question: the prompt's last user message (its last message when it has none). */
export function promptText(t: Messages): string {
  const prompt = t.messages.slice(0, promptLength(t));
  const user = [...prompt].reverse().find((m) => m.role === 'user');
  return user?.content ?? prompt.at(-1)?.content ?? '';
}
