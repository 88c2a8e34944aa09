// A real S3-compatible server (s3rver) on 127.0.0.1 with the named buckets, in a temporary folder, for upload tests.
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";

export interface LocalS3 {
  /** http://127.0.0.1:<port>, without a bucket. */
  url: string;
  close(): Promise<void>;
}

export async function startS3(buckets: readonly string[]): Promise<LocalS3> {
  const storage = await mkdtemp(join(tmpdir(), "s3rver-"));
  const s3 = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: storage,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  const { port } = (await s3.run()) as unknown as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await s3.close();
      await rm(storage, { recursive: true, force: true });
    },
  };
}
