// The well-known credential files no build ships by default (docs/toolkit.md §8.1): `flash build` leaves them out
// of the artifact, and `flash deploy` out of a project Dockerfile's build context. A `!pattern` re-includes one.
import ignore, { type Ignore } from "ignore";

/**
 * Names matched at any depth (a trailing `/` is a folder). Not `*.pem`/`*.key`: those are as often the
 * certificates an app needs to trust a service as they are private keys.
 */
export const CREDENTIAL_FILES = [
  ".env",
  ".env.*",
  "!.env.example",
  ".npmrc",
  ".yarnrc.yml",
  ".pypirc",
  ".netrc",
  ".git-credentials",
  ".aws/",
  ".ssh/",
  ".docker/config.json",
  ".runpod/",
  "id_rsa",
  "id_dsa",
  "id_ecdsa",
  "id_ed25519",
];

/** A pattern as matched at any depth, `!` kept: `**\/` works alike in .gitignore and .dockerignore syntax. */
function anyDepth(pattern: string): string {
  const negated = pattern.startsWith("!");
  const name = negated ? pattern.slice(1) : pattern;
  return `${negated ? "!" : ""}**/${name}`;
}

/** The credential files as .gitignore rules (what `flash build` leaves out). */
export function credentialRules(): Ignore {
  return ignore().add(CREDENTIAL_FILES.map(anyDepth));
}

/** The credential files as .dockerignore lines (a folder without its `/`, which .dockerignore does not take). */
export function credentialDockerignore(): string[] {
  return CREDENTIAL_FILES.map((pattern) => anyDepth(pattern).replace(/\/$/, ""));
}
