// With MINDSCAPE_CLIENT_REQUESTS set (scripts/test.sh sets it), every JSON-RPC request the
// Foundry module or the Roll20 Mod script sends to its test fakes is appended to that file,
// one JSON line `{client, file, body}`. The Python suite then checks each against the real
// companion's params schemas (tests/companion/test_client_requests.py): the clients cannot
// send what only the fakes accept.
import { appendFileSync } from "node:fs";
import path from "node:path";

/** Record one request body (a call or a batch) of `client` ("foundry" or "roll20"). */
export function recordRequest(client, body) {
  const file = process.env.MINDSCAPE_CLIENT_REQUESTS;
  if (!file) return;
  appendFileSync(file, `${JSON.stringify({ client, file: path.basename(process.argv[1] ?? ""), body })}\n`);
}
