// Container registry credentials made through REST v2 (/v2/registries): listed without their password, and
// kept while an endpoint or a Pod pulls with them.
import { addSecret } from "../../log/index.js";
import { newShortId } from "./ids.js";
import { Problem } from "./problem.js";

export interface RegistryAuth {
  id: string;
  name: string;
  username: string;
  password: string;
}

/** A credential as the API shows it. */
export interface RegistryView {
  id: string;
  name: string;
}

export class Registries {
  private readonly auths = new Map<string, RegistryAuth>();

  list(): RegistryView[] {
    return [...this.auths.values()].map(view);
  }

  /** Stores a credential; its password is redacted from every log line from now on. */
  add(body: { name: string; username: string; password: string }): RegistryView {
    addSecret(body.password);
    const auth = { id: newShortId(8), ...body };
    this.auths.set(auth.id, auth);
    return view(auth);
  }

  has(id: string): boolean {
    return this.auths.has(id);
  }

  /** The credential, or a 404. */
  get(id: string): RegistryView {
    const auth = this.auths.get(id);
    if (!auth) throw new Problem(404, "registry not found");
    return view(auth);
  }

  /** The login an image pull sends, when the credential exists. */
  creds(id: string | null): { username: string; password: string } | undefined {
    const auth = id === null ? undefined : this.auths.get(id);
    return auth ? { username: auth.username, password: auth.password } : undefined;
  }

  /** Deletes a credential; `user` names what still pulls with it (refused then). */
  remove(id: string, user: string | undefined): void {
    if (!this.auths.has(id)) throw new Problem(404, "registry not found");
    if (user) throw new Problem(400, `registry credential ${id} is in use by ${user}`);
    this.auths.delete(id);
  }
}

function view({ id, name }: RegistryAuth): RegistryView {
  return { id, name };
}
