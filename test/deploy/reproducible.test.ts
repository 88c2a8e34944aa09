// Reproducible app images (issue 44, item 12): what the image build copies carries no build time. With
// SOURCE_DATE_EPOCH the artifact is the same bytes for the same files, whatever their times here; the generated
// image's copy of the manifest says the image's own time (SOURCE_DATE_EPOCH, else 0), which buildah's
// --timestamp gives its layers. test/e2e/deploy.test.ts builds an app twice and gets one digest.
import { readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildArtifact } from "../../src/toolkit/bundle/index.js";
import { generatedContext, imageEpoch } from "../../src/toolkit/image/build.js";
import { GREETER, makeProject, type Project } from "../cli/toolkit-project.js";

let project: Project | undefined;
const saved = process.env.SOURCE_DATE_EPOCH;
afterEach(() => {
  project?.remove();
  project = undefined;
  if (saved === undefined) delete process.env.SOURCE_DATE_EPOCH;
  else process.env.SOURCE_DATE_EPOCH = saved;
});

describe("reproducible builds", () => {
  it("SOURCE_DATE_EPOCH: the same files give the same artifact, byte for byte, and the manifest says that time", async () => {
    process.env.SOURCE_DATE_EPOCH = "1700000000";
    project = makeProject(GREETER);
    const build = async () => {
      const built = await buildArtifact({
        root: project!.dir,
        entries: ["handler.ts"],
        installDependencies: false,
      });
      return readFileSync(built.artifact);
    };
    const first = await build();
    // Touched, not changed: a checkout or an editor's save gives new times to the same content.
    utimesSync(join(project.dir, "lib/greet.ts"), new Date(), new Date(Date.now() + 5000));
    const second = await build();
    expect(second.equals(first)).toBe(true);
    const manifest = JSON.parse(readFileSync(join(project.dir, ".flash/flash_manifest.json"), "utf8")) as {
      generatedAt: string;
    };
    expect(manifest.generatedAt).toBe("2023-11-14T22:13:20.000Z");
  });

  it("the generated image's manifest says the image's time: 0 by default, SOURCE_DATE_EPOCH when set", async () => {
    delete process.env.SOURCE_DATE_EPOCH;
    project = makeProject(GREETER);
    const built = await buildArtifact({
      root: project.dir,
      entries: ["handler.ts"],
      installDependencies: false,
    });
    const context = join(project.dir, ".flash", "image");
    await generatedContext(project.dir, built.artifact, context);
    const inImage = () =>
      (JSON.parse(readFileSync(join(context, "app/flash_manifest.json"), "utf8")) as { generatedAt: string })
        .generatedAt;
    expect(inImage()).toBe("1970-01-01T00:00:00.000Z");
    expect(imageEpoch()).toBe(0);
    process.env.SOURCE_DATE_EPOCH = "1700000000";
    await generatedContext(project.dir, built.artifact, context);
    expect(inImage()).toBe("2023-11-14T22:13:20.000Z");
    expect(imageEpoch()).toBe(1_700_000_000);
    // Not a whole number of seconds: ignored, as reproducible-builds.org asks.
    expect(imageEpoch({ SOURCE_DATE_EPOCH: "soon" })).toBe(0);
  });
});
