// The one redaction point: secrets never reach a log line, an error line or the console's log views. Known values
// (API keys, registry and S3 credentials, registered where they are read) and `NAME=value` pairs, `--creds` and
// Bearer tokens whose form says secret are replaced by ***; a URL shown on purpose goes through redactUrl first.

/** Values shorter than this are not registered: replacing them would mangle ordinary words. */
const MIN_SECRET_LENGTH = 8;
const secrets = new Set<string>();

/** A value that must never be logged (a key, a password), from now on in this process. */
export function addSecret(value: string | undefined | null): void {
  const trimmed = value?.trim();
  if (trimmed && trimmed.length >= MIN_SECRET_LENGTH) secrets.add(trimmed);
}

/**
 * Environment names whose value is a secret (RUNPOD_AI_API_KEY, BUCKET_SECRET_ACCESS_KEY, HF_TOKEN…); not
 * placeholders (<key>, $VAR), and not counts such as MAX_TOKENS: a TOKEN name must end in TOKEN.
 */
const SECRET_ASSIGNMENT =
  /\b([A-Z0-9_]*(?:API_KEY|SECRET|PASSWORD|PASSWD|ACCESS_KEY|ACCESS_KEY_ID|CREDENTIALS)[A-Z0-9_]*|[A-Z0-9_]*TOKEN)=(?![<$*])("[^"]*"|'[^']*'|[^\s'"]+)/g;
/**
 * The same in JSON: "secretAccessKey", "password", "api_key", "access_token", "authToken"…; a bare "token" is
 * left alone (a model's stream chunks are {"token": …}).
 */
const SECRET_FIELD =
  /("[A-Za-z_]*(?:[Ss]ecret|[Pp]assword|[Aa]pi_?[Kk]ey|[Aa]ccess_?[Kk]ey(?:_?[Ii]d)?|(?:[Aa]ccess|[Aa]uth|[Rr]efresh|[Ii]d|[Bb]earer|[Aa]pi|[Ss]ession)_?[Tt]oken)"\s*:\s*)"[^"]*"/g;
const CREDS_FLAG = /(--creds[ =])\S+/g;
const BEARER = /(Bearer )[A-Za-z0-9._~+/=-]{8,}/g;

/** `text` with every secret replaced by ***. */
export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.replaceAll(secret, "***");
  if (out.includes("=")) out = out.replace(SECRET_ASSIGNMENT, "$1=***");
  if (out.includes('"')) out = out.replace(SECRET_FIELD, '$1"***"');
  if (out.includes("--creds")) out = out.replace(CREDS_FLAG, "$1***");
  if (out.includes("Bearer ")) out = out.replace(BEARER, "$1***");
  return out;
}

/**
 * A URL as a log line or an error message shows it: its user and password, every query value and the fragment
 * replaced by *** (a webhook's `?token=`, a presigned URL's signature); the scheme, host, path and query names
 * stay. Text that is not a URL is only redacted as any text is.
 */
export function redactUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    return redact(String(url));
  }
  if (parsed.username) parsed.username = "***";
  if (parsed.password) parsed.password = "***";
  if (parsed.hash) parsed.hash = "***";
  if (parsed.search) parsed.search = hiddenValues(parsed.search.slice(1));
  return parsed.href;
}

/** `a=1&b=2&flag` as `a=***&b=***&flag`: names kept, values hidden. */
function hiddenValues(query: string): string {
  return query
    .split("&")
    .map((pair) => {
      const at = pair.indexOf("=");
      return at === -1 ? pair : `${pair.slice(0, at)}=***`;
    })
    .join("&");
}
