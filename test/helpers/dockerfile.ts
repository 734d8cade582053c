/** One Dockerfile instruction: its keyword in capitals and the rest of its line. */
export interface Instruction {
  readonly op: string;
  readonly args: string;
}

/** Dockerfile instructions (continuations joined, comments dropped), split into stages at each FROM. */
export function dockerStages(text: string): Instruction[][] {
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const stages: Instruction[][] = [];
  for (const line of lines) {
    const match = /^(\S+)\s*(.*)$/.exec(line)!;
    const ins = { op: match[1]!.toUpperCase(), args: match[2]! };
    if (ins.op === 'FROM') stages.push([]);
    stages.at(-1)?.push(ins);
  }
  return stages;
}
