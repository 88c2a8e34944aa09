// The GPU catalog the local platform serves at GET /v2/catalog/gpus: RunPod's serverless pools and their cards
// (each GpuType of src/app/gpu.ts in the pool it is sold in), so deploys map GPUs as they do on RunPod.

export interface CatalogGpu {
  id: string;
  name: string;
  pool: string | null;
  memory: number;
}

/** [id, short name, pool, GB]. */
const GPUS: readonly [string, string, string | null, number][] = [
  ["NVIDIA RTX A4000", "RTX A4000", "AMPERE_16", 16],
  ["NVIDIA RTX A4500", "RTX A4500", "AMPERE_16", 20],
  ["NVIDIA RTX A5000", "RTX A5000", "AMPERE_24", 24],
  ["NVIDIA GeForce RTX 3090", "RTX 3090", "AMPERE_24", 24],
  ["NVIDIA L4", "L4", "AMPERE_24", 24],
  ["NVIDIA GeForce RTX 4090", "RTX 4090", "ADA_24", 24],
  ["NVIDIA GeForce RTX 5090", "RTX 5090", "ADA_32_PRO", 32],
  ["NVIDIA RTX A6000", "RTX A6000", "AMPERE_48", 48],
  ["NVIDIA A40", "A40", "AMPERE_48", 48],
  ["NVIDIA L40", "L40", "ADA_48_PRO", 48],
  ["NVIDIA L40S", "L40S", "ADA_48_PRO", 48],
  ["NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "ADA_48_PRO", 48],
  ["NVIDIA A100 80GB PCIe", "A100 PCIe", "AMPERE_80", 80],
  ["NVIDIA A100-SXM4-80GB", "A100 SXM", "AMPERE_80", 80],
  ["NVIDIA H100 PCIe", "H100 PCIe", "ADA_80_PRO", 80],
  ["NVIDIA H100 80GB HBM3", "H100 SXM", "ADA_80_PRO", 80],
  ["NVIDIA H100 NVL", "H100 NVL", "ADA_80_PRO", 94],
  ["NVIDIA H200", "H200 SXM", "HOPPER_141", 141],
  ["NVIDIA B200", "B200", "BLACKWELL_180", 180],
];

export const DEFAULT_GPU_CATALOG: readonly CatalogGpu[] = GPUS.map(([id, name, pool, memory]) => ({
  id,
  name,
  pool,
  memory,
}));

/** A GpuType entry of the API's shape (prices are the platform's own: nothing is billed here). */
export function catalogEntry(gpu: CatalogGpu) {
  return {
    id: gpu.id,
    name: gpu.name,
    pool: gpu.pool,
    manufacturer: "NVIDIA" as const,
    memory: gpu.memory,
    secure: true,
    community: false,
    // Only a type sold in a serverless pool has a serverless price in RunPod's answer.
    price: { secure: 0, community: 0, ...(gpu.pool ? { serverless: 0 } : {}) },
    maxCount: { secure: 8, community: 0 },
  };
}
