// The API's error answers as sentences for the user: which thing, what the API said, and which field.
import { type ApiError, describeProblem } from "./client.js";

/** "The API at URL refused endpoint X (POST /v2/serverless): 400 Bad Request: … (gpu.pools: …)", with a hint for 401/403. */
export function apiErrorSentence(err: ApiError, what: string, url: string): string {
  const base = `the API at ${url} refused ${what} (${err.method} ${err.path.split("?")[0]}): ${describeProblem(err.status, err.problem)}`;
  if (err.status === 401) {
    return `${base}. The API key was not accepted: run flash login with a valid key, or check RUNPOD_API_KEY (it overrides the saved key)`;
  }
  if (err.status === 403)
    return `${base}. The key lacks a permission this needs: use a key with the All permission`;
  if (err.status === 404 && err.method !== "GET") return `${base}. It may have been deleted meanwhile`;
  return base;
}
