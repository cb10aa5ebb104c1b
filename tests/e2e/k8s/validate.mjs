// Validates the v1 List that `air run --dry-run --backend k8s -o json` prints against the Kubernetes OpenAPI
// schema compiled by the npm package kubernetes-models (types, enums, required fields). The JobSet CRD is
// not in that package: its envelope is checked by hand and its Job template with batch/v1's JobSpec schema.
// Usage: node validate.mjs LIST.json   (exit 0: valid; 1: the first problem printed)
import { readFileSync } from "node:fs";
import { Job } from "kubernetes-models/batch/v1";
import { Service } from "kubernetes-models/v1";
import { validate as validateJobSpec } from "kubernetes-models/_schemas/IoK8sApiBatchV1JobSpec";

function fail(msg) {
  console.error(`invalid: ${msg}`);
  process.exit(1);
}

function checkJobSpec(spec, where) {
  if (!validateJobSpec(spec)) fail(`${where}: ${JSON.stringify(validateJobSpec.errors.slice(0, 3))}`);
}

const list = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (list.apiVersion !== "v1" || list.kind !== "List" || !Array.isArray(list.items)) fail("not a v1 List");
for (const [i, item] of list.items.entries()) {
  const where = `items[${i}] ${item.kind}`;
  try {
    if (item.kind === "Service") new Service(item).validate();
    else if (item.kind === "Job") new Job(item).validate();
    else if (item.kind === "JobSet") {
      if (item.apiVersion !== "jobset.x-k8s.io/v1alpha2") fail(`${where}: apiVersion ${item.apiVersion}`);
      const s = item.spec;
      if (typeof s.network?.enableDNSHostnames !== "boolean" || typeof s.network?.subdomain !== "string")
        fail(`${where}: spec.network`);
      if (!Number.isInteger(s.failurePolicy?.maxRestarts)) fail(`${where}: spec.failurePolicy.maxRestarts`);
      if (!Array.isArray(s.replicatedJobs) || s.replicatedJobs.length === 0) fail(`${where}: spec.replicatedJobs`);
      for (const rj of s.replicatedJobs) {
        if (typeof rj.name !== "string" || !Number.isInteger(rj.replicas)) fail(`${where}: replicatedJob name/replicas`);
        checkJobSpec(rj.template.spec, `${where} replicatedJob ${rj.name}`);
      }
    } else fail(`${where}: unexpected kind`);
  } catch (e) {
    fail(`${where}: ${e.message.slice(0, 500)}`);
  }
}
console.log(`valid: ${list.items.map((x) => x.kind).join(", ")}`);
