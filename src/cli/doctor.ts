// `flash doctor [file] [--json]`: every fitness check and the GPU facts, here and now, as a table or JSON.
import { arch, platform } from "node:os";
import { loadApp } from "../app/load.js";
import { isFlashError } from "../flash-error.js";
import { type GpuFacts, readGpuFacts } from "../gpu/facts.js";
import { describeGpu } from "../gpu/nvml.js";
import { ConfigError, toggle } from "../options/index.js";
import { readWorkerConfig } from "../runtime/config/options.js";
import { registeredChecks } from "../runtime/fitness/registry.js";
import { type CheckResult, formatMs, runChecks } from "../runtime/fitness/run.js";
import { builtinChecks } from "../runtime/fitness/system.js";
import { VERSION } from "../version.js";
import { type CommandSpec, parseCommandArgs } from "./options.js";

export const spec = {
  name: "doctor",
  args: "[file]",
  summary: "run every fitness check and list the GPUs (a table, or --json)",
  options: { json: toggle(["--json"], "the report as JSON") },
} satisfies CommandSpec;

export interface DoctorReport {
  ok: boolean;
  version: string;
  node: string;
  platform: string;
  gpu: GpuFacts;
  checks: Omit<CheckResult, "stack">[];
}

function gpuLines(gpu: GpuFacts): string[] {
  if (gpu.state === "none") return [`GPU: none (${gpu.reason}); the GPU checks do not apply.`];
  if (gpu.state === "error") return [`GPU: the NVIDIA driver is present but NVML failed: ${gpu.error}`];
  const { driverVersion, cudaVersion, gpus } = gpu.inventory;
  return gpus.map(
    (g) => `GPU ${g.index}: ${describeGpu(g)} | ${g.uuid} | driver ${driverVersion}, CUDA ${cudaVersion}`,
  );
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join("  ")
      .trimEnd(),
  );
}

export function formatReport(report: DoctorReport): string {
  const rows = [
    ["CHECK", "RESULT", "TIME", "DETAIL"],
    ...report.checks.map((c) => [
      c.name,
      c.ok ? "pass" : "FAIL",
      formatMs(c.ms),
      (c.ok ? c.detail : c.error) ?? "",
    ]),
  ];
  const failed = report.checks.filter((c) => !c.ok).length;
  return [
    `flash-worker ${report.version} | Node ${report.node} | ${report.platform}`,
    ...gpuLines(report.gpu),
    "",
    ...table(rows),
    "",
    failed === 0
      ? `All ${report.checks.length} checks passed.`
      : `${failed} of ${report.checks.length} checks failed: on the platform this worker would report itself unhealthy and exit 1.`,
  ].join("\n");
}

/** Runs the built-in checks (whatever RUNPOD_SKIP_* say) and, with a file, the checks it registers. */
export async function doctor(file: string | undefined, env = process.env): Promise<DoctorReport> {
  // The worker's own thresholds (RUNPOD_MIN_MEMORY_GB…), as a worker started here would read them.
  const { config } = readWorkerConfig([], env);
  if (file) await loadApp(file);
  const gpu = await readGpuFacts();
  const fitness = { ...config.fitness, skipSystem: false, skipGpu: false };
  const results = await runChecks([...builtinChecks(fitness, gpu), ...registeredChecks()], {
    stopAtFailure: false,
  });
  return {
    ok: results.every((r) => r.ok),
    version: VERSION,
    node: process.version,
    platform: `${platform()} ${arch()}`,
    gpu,
    checks: results.map(({ stack: _stack, ...rest }) => rest),
  };
}

export async function run(args: string[]): Promise<number> {
  let report: DoctorReport;
  let json = false;
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    json = options.json;
    if (positional.length > 1) throw new ConfigError(`Unexpected argument ${positional[1]}`);
    report = await doctor(positional[0]);
  } catch (err) {
    if (isFlashError(err, "CONFIG_INVALID")) {
      process.stderr.write(`flash doctor: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  process.stdout.write(`${json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`);
  return report.ok ? 0 : 1;
}
