// Finds a Python that can `import cloudpickle` and talks to test/unit/payload/py_peer.py over stdin/stdout lines.
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** Debian's python3-cloudpickle installs for /usr/bin/python3; `python3` on PATH may be another interpreter. */
const CANDIDATES = ["/usr/bin/python3", "python3", "python"];

export interface PythonFound {
  path: string | null;
  /** The interpreter found, or why none qualified (what a failing test says). */
  reason: string;
}

export function findPython(): PythonFound {
  const tried: string[] = [];
  for (const path of CANDIDATES) {
    const r = spawnSync(
      path,
      ["-c", "import cloudpickle, sys; print(sys.version.split()[0], cloudpickle.__version__)"],
      {
        encoding: "utf8",
      },
    );
    if (r.status === 0) return { path, reason: `${path}: Python ${r.stdout.trim()}` };
    tried.push(
      `${path}: ${r.error ? r.error.message : (r.stderr.trim().split("\n").at(-1) ?? `exit ${r.status}`)}`,
    );
  }
  return {
    path: null,
    reason: `no Python with cloudpickle: run \`bash scripts/test-deps.sh\` as root (it installs python3-cloudpickle); tried ${tried.join("; ")}`,
  };
}

export interface PeerAnswer {
  canon?: string;
  b64?: string;
  error?: string;
}

/** One long-lived Python process answering requests by id. */
export class PythonPeer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, (a: PeerAnswer) => void>();
  private next = 0;

  constructor(python: string) {
    const script = fileURLToPath(new URL("./py_peer.py", import.meta.url));
    this.child = spawn(python, [script], { env: { ...process.env, PYTHONHASHSEED: "0" } });
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      const a = JSON.parse(line) as PeerAnswer & { id: number };
      this.waiting.get(a.id)?.(a);
      this.waiting.delete(a.id);
    });
  }

  request(op: string, fields: Record<string, unknown>): Promise<PeerAnswer> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, op, ...fields })}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }
}
