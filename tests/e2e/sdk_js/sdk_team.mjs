// Databricks' own JS SDK (@databricks/sdk-experimental) against an air workspace: the Token API, token
// management, SCIM Me, secret scope ACLs and volume grants with the Files API, as two users and an admin (docs/security.md). Every call goes
// through the SDK's own request code, auth and error parsing; a failed expectation exits 1 naming the step.
// Usage: node sdk_team.mjs URL ADMIN_TOKEN ALICE_TOKEN BOB_TOKEN SECRET_VALUE
import sdk from "@databricks/sdk-experimental";

const { WorkspaceClient } = sdk;
const [url, adminTok, aliceTok, bobTok, value] = process.argv.slice(2);
if (!value) { console.error("usage: node sdk_team.mjs URL ADMIN ALICE BOB VALUE"); process.exit(2); }
const client = (token) => new WorkspaceClient({ host: url, token, authType: "pat" });
const admin = client(adminTok), alice = client(aliceTok), bob = client(bobTok);

let failed = 0;
const ok = (what) => console.log(`ok   ${what}`);
const bad = (what, why) => { failed++; console.log(`FAIL ${what}: ${why}`); };
// Nothing the SDK hands back for a refusal may hold the secret's value or a token.
const clean = (text) => ![value, adminTok, aliceTok, bobTok].some((s) => text.includes(s));
const expect = async (what, f, check) => {
  try { const r = await f(); const why = check(r); why ? bad(what, why) : ok(what); return r; }
  catch (e) { bad(what, `${e.statusCode ?? ""} ${e.errorCode ?? ""} ${e.message}`); return undefined; }
};
// A refusal: the SDK raises an ApiError with this HTTP status and error code, and a message that says why.
const refused = async (what, f, status, code, says) => {
  try { const r = await f(); bad(what, `allowed: ${JSON.stringify(r).slice(0, 200)}`); }
  catch (e) {
    const text = `${e.message} ${JSON.stringify(e.response ?? "")}`;
    if (e.statusCode !== status || e.errorCode !== code) bad(what, `got ${e.statusCode} ${e.errorCode} ${e.message}`);
    else if (says && !says.test(e.message)) bad(what, `the reason does not say it: ${e.message}`);
    else if (!clean(text)) bad(what, "the refusal holds a secret value or a token");
    else ok(`${what} (${status} ${code}: ${e.message})`);
  }
};
const all = async (it) => { const out = []; for await (const x of it) out.push(x); return out; };

// SCIM Me: who each token is.
await expect("admin: currentUser.me() is in the admins group", () => admin.currentUser.me(),
  (me) => (me.groups ?? []).some((g) => g.display === "admins") ? "" : JSON.stringify(me));
await expect("alice: currentUser.me() is alice, active, not an admin", () => alice.currentUser.me(),
  (me) => me.userName === "alice" && me.active && !(me.groups ?? []).some((g) => g.display === "admins")
    ? "" : JSON.stringify(me));

// The Token API: create (value shown once, lifetime honoured), list, use, delete; the deleted token is refused.
const before = Date.now();
const made = await expect("alice: tokens.create with a comment and a 600 s lifetime",
  () => alice.tokens.create({ comment: "sdk-check", lifetime_seconds: 600 }),
  (r) => !r.token_value ? "no token_value"
    : Math.abs(r.token_info.expiry_time - (before + 600000)) > 60000 ? `expiry ${r.token_info.expiry_time}` : "");
if (!made) process.exit(1);
const id = made.token_info.token_id;
await expect("the new token is alice's", () => client(made.token_value).currentUser.me(),
  (me) => me.userName === "alice" ? "" : me.userName);
await expect("alice: tokens.list shows it with its comment and never a value", () => all(alice.tokens.list()),
  (l) => !l.some((t) => t.token_id === id && t.comment === "sdk-check") ? JSON.stringify(l)
    : JSON.stringify(l).includes(made.token_value) ? "a listed token holds its value" : "");
await expect("bob: tokens.list does not show alice's token", () => all(bob.tokens.list()),
  (l) => l.some((t) => t.token_id === id) ? "bob sees it" : "");
await expect("admin: tokenManagement.list shows it as alice's", () => all(admin.tokenManagement.list({})),
  (l) => l.some((t) => t.token_id === id && t.created_by_username === "alice") ? "" : JSON.stringify(l).slice(0, 300));
await refused("bob: tokenManagement.list", () => all(bob.tokenManagement.list({})), 403, "PERMISSION_DENIED", /admin/);
await refused("bob: tokens.delete of alice's token", () => bob.tokens.delete({ token_id: id }), 404, "RESOURCE_DOES_NOT_EXIST");
await expect("alice: tokens.delete", () => alice.tokens.delete({ token_id: id }), () => "");
await refused("the deleted token on its next request", () => client(made.token_value).currentUser.me(), 401, "UNAUTHENTICATED");

// Secret scope ACLs: the creator holds MANAGE; bob reads only once granted READ, and never manages.
const scope = "sdkteam";
await expect("alice: secrets.createScope", () => alice.secrets.createScope({ scope }), () => "");
await expect("alice: secrets.putSecret", () => alice.secrets.putSecret({ scope, key: "hf_token", string_value: value }), () => "");
await expect("alice: secrets.listAcls shows her MANAGE", () => all(alice.secrets.listAcls({ scope })),
  (l) => l.some((a) => a.principal === "alice" && a.permission === "MANAGE") ? "" : JSON.stringify(l));
await refused("bob: secrets.getSecret before a grant", () => bob.secrets.getSecret({ scope, key: "hf_token" }),
  403, "PERMISSION_DENIED", /READ.*sdkteam/);
await refused("bob: secrets.listSecrets before a grant", () => all(bob.secrets.listSecrets({ scope })),
  403, "PERMISSION_DENIED", /READ.*sdkteam/);
await refused("bob: secrets.putAcl granting himself MANAGE",
  () => bob.secrets.putAcl({ scope, principal: "bob", permission: "MANAGE" }), 403, "PERMISSION_DENIED", /MANAGE/);
await expect("alice: secrets.putAcl bob READ", () => alice.secrets.putAcl({ scope, principal: "bob", permission: "READ" }), () => "");
await expect("alice: secrets.getAcl bob", () => alice.secrets.getAcl({ scope, principal: "bob" }),
  (a) => a.permission === "READ" ? "" : JSON.stringify(a));
await expect("bob: secrets.listSecrets once granted READ", () => all(bob.secrets.listSecrets({ scope })),
  (l) => l.some((s) => s.key === "hf_token") ? "" : JSON.stringify(l));
await expect("bob: secrets.getSecret once granted READ", () => bob.secrets.getSecret({ scope, key: "hf_token" }),
  (r) => Buffer.from(r.value ?? "", "base64").toString() === value ? "" : "the value differs");
await refused("bob: secrets.putSecret with READ only",
  () => bob.secrets.putSecret({ scope, key: "other", string_value: "x" }), 403, "PERMISSION_DENIED", /WRITE/);
await expect("alice: secrets.deleteAcl bob", () => alice.secrets.deleteAcl({ scope, principal: "bob" }), () => "");
await refused("bob: secrets.getSecret after the grant is deleted", () => bob.secrets.getSecret({ scope, key: "hf_token" }),
  403, "PERMISSION_DENIED", /READ/);
await expect("alice: secrets.listAcls no longer names bob", () => all(alice.secrets.listAcls({ scope })),
  (l) => l.some((a) => a.principal === "bob") ? JSON.stringify(l) : "");

// Volumes (Unity Catalog grants and the Files API): the creator owns main.sdk.data; bob reads only with
// READ_VOLUME and never writes. SDK 0.17.0 sends no body for files.upload (its _upload drops `contents`) nor for
// grants.update (its client attaches a payload to POST and PUT only), so those two requests are made with
// fetch, in the same shapes the SDK documents; every other call is the SDK's.
const vol = "/Volumes/main/sdk/data", file = `${vol}/hello.txt`, words = `hello from alice ${Date.now()}`;
const raw = (token, method, path, body, type) => fetch(url + path, { method, body,
  headers: { Authorization: `Bearer ${token}`, "Content-Type": type } }).then(async (r) => {
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`); return r; });
const grant = (change) => raw(aliceTok, "PATCH", "/api/2.1/unity-catalog/permissions/volume/main.sdk.data",
  JSON.stringify({ changes: [change] }), "application/json");
const read = async (c) => new Response((await c.files.download({ file_path: file })).contents).text();
await expect("alice: files.createDirectory makes her volume", () => alice.files.createDirectory({ directory_path: vol }), () => "");
await expect("alice: a file uploaded through the Files API", () => raw(aliceTok, "PUT", `/api/2.0/fs/files${file}?overwrite=true`,
  words, "application/octet-stream"), () => "");
await expect("alice: files.download gives it back", () => read(alice), (t) => t === words ? "" : `got '${t}'`);
// Before a grant the volume does not exist for bob (issue 40: no existence oracle, no owner named).
await refused("bob: files.download before a grant", () => read(bob), 404, "NOT_FOUND", /main\/sdk\/data\/hello\.txt does not exist/);
await refused("bob: grants.get before a grant", () => bob.grants.get({ securable_type: "volume", full_name: "main.sdk.data" }),
  404, "RESOURCE_DOES_NOT_EXIST", /volume main\.sdk\.data does not exist/);
await refused("bob: granting himself WRITE_VOLUME", () => raw(bobTok, "PATCH", "/api/2.1/unity-catalog/permissions/volume/main.sdk.data",
  JSON.stringify({ changes: [{ principal: "bob", add: ["WRITE_VOLUME"] }] }), "application/json").catch((e) => {
  const m = /: (\d+) (.*)$/s.exec(e.message); const b = JSON.parse(m[2]);
  throw Object.assign(new Error(b.message), { statusCode: +m[1], errorCode: b.error_code }); }), 404, "RESOURCE_DOES_NOT_EXIST");
await expect("alice: grants READ_VOLUME to bob", () => grant({ principal: "bob", add: ["READ_VOLUME"] }), () => "");
await expect("bob: grants.get shows his READ_VOLUME", () => bob.grants.get({ securable_type: "volume", full_name: "main.sdk.data" }),
  (r) => (r.privilege_assignments ?? []).some((a) => a.principal === "bob" && a.privileges.includes("READ_VOLUME"))
    ? "" : JSON.stringify(r));
await expect("bob: files.download once granted", () => read(bob), (t) => t === words ? "" : `got '${t}'`);
await refused("bob: files.upload with READ_VOLUME only", () => bob.files.upload({ file_path: `${vol}/bob.txt`, overwrite: true }),
  403, "PERMISSION_DENIED", /WRITE_VOLUME/);
await expect("alice: revokes it", () => grant({ principal: "bob", remove: ["READ_VOLUME"] }), () => "");
await refused("bob: files.download after the revoke", () => read(bob), 404, "NOT_FOUND", /does not exist/);

console.log(failed ? `${failed} step(s) failed` : "all steps passed");
process.exit(failed ? 1 : 0);
