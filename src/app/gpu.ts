// The platform's GPU names: a group is a pool of cards, a type one card model (the values the platform's API takes).

/** GPU pools by architecture and memory; `ANY` takes whatever card is free. */
export const GpuGroup = {
  ANY: "any",
  AMPERE_16: "AMPERE_16",
  AMPERE_24: "AMPERE_24",
  AMPERE_48: "AMPERE_48",
  AMPERE_80: "AMPERE_80",
  ADA_24: "ADA_24",
  ADA_32_PRO: "ADA_32_PRO",
  ADA_48_PRO: "ADA_48_PRO",
  ADA_80_PRO: "ADA_80_PRO",
  HOPPER_141: "HOPPER_141",
} as const;
export type GpuGroup = (typeof GpuGroup)[keyof typeof GpuGroup];

/** Single card models, as the platform names them. */
export const GpuType = {
  NVIDIA_GEFORCE_RTX_3090: "NVIDIA GeForce RTX 3090",
  NVIDIA_GEFORCE_RTX_4090: "NVIDIA GeForce RTX 4090",
  NVIDIA_GEFORCE_RTX_5090: "NVIDIA GeForce RTX 5090",
  NVIDIA_RTX_A4000: "NVIDIA RTX A4000",
  NVIDIA_RTX_A4500: "NVIDIA RTX A4500",
  NVIDIA_RTX_A5000: "NVIDIA RTX A5000",
  NVIDIA_RTX_A6000: "NVIDIA RTX A6000",
  NVIDIA_RTX_6000_ADA_GENERATION: "NVIDIA RTX 6000 Ada Generation",
  NVIDIA_L4: "NVIDIA L4",
  NVIDIA_L40: "NVIDIA L40",
  NVIDIA_L40S: "NVIDIA L40S",
  NVIDIA_A40: "NVIDIA A40",
  NVIDIA_A100_80GB_PCIe: "NVIDIA A100 80GB PCIe",
  NVIDIA_A100_SXM4_80GB: "NVIDIA A100-SXM4-80GB",
  NVIDIA_H100_PCIe: "NVIDIA H100 PCIe",
  NVIDIA_H100_80GB_HBM3: "NVIDIA H100 80GB HBM3",
  NVIDIA_H100_NVL: "NVIDIA H100 NVL",
  NVIDIA_H200: "NVIDIA H200",
  NVIDIA_B200: "NVIDIA B200",
} as const;
export type GpuType = (typeof GpuType)[keyof typeof GpuType];

const GROUPS: ReadonlySet<string> = new Set(Object.values(GpuGroup));
const TYPES: ReadonlySet<string> = new Set(Object.values(GpuType));

export const isGpuGroup = (value: unknown): value is GpuGroup =>
  typeof value === "string" && GROUPS.has(value);
export const isGpuType = (value: unknown): value is GpuType => typeof value === "string" && TYPES.has(value);
