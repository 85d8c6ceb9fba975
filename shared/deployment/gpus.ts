// NVIDIA GPU instance types the learner runs on: how many GPUs each has and how much memory each GPU has (EC2's
// published specifications). The CDK settings check a job's GPU count against the first; `toolrl plan --env`
// plans a run against the second.

/** GPUs of an instance type; undefined for a type or size this table does not know. */
export function gpusOf(instanceType: string): number | undefined {
  const [family, size] = instanceType.split('.') as [string, string];
  if (['p4d', 'p4de', 'p5', 'p5e', 'p5en', 'p3dn'].includes(family)) return 8;
  if (family === 'p3') return { '2xlarge': 1, '8xlarge': 4, '16xlarge': 8 }[size];
  if (family === 'g4dn') return size === '12xlarge' ? 4 : size === 'metal' ? 8 : 1;
  if (['g5', 'g6', 'g6e', 'gr6'].includes(family))
    return size === '48xlarge' ? 8 : size === '12xlarge' || size === '24xlarge' ? 4 : 1;
  return undefined;
}

/** Memory of one GPU of the family, in GB (1e9 bytes; the marketing GB: an A100 40GB has 40 GB). */
const GPU_MEMORY_GB: Record<string, number> = {
  g4dn: 16, // T4
  g5: 24, // A10G
  g6: 24, // L4
  gr6: 24, // L4
  g6e: 48, // L40S
  p3: 16, // V100
  p3dn: 32, // V100 32GB
  p4d: 40, // A100 40GB
  p4de: 80, // A100 80GB
  p5: 80, // H100
  p5e: 141, // H200
  p5en: 141, // H200
};

export function gpuMemoryGb(instanceType: string): number | undefined {
  return GPU_MEMORY_GB[instanceType.split('.')[0]!];
}
