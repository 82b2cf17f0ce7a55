// Validates Kubernetes custom resources read as a JSON array on stdin against the
// schemas @kubernetes-models publishes (compiled from the CRDs), and prints one JSON
// result per object: {"kind", "name", "errors": [...]}.
const fs = require("fs");

const MODELS = {
  "cloud.google.com/v1/ComputeClass": () => require("@kubernetes-models/gke/cloud.google.com/v1/ComputeClass").ComputeClass,
};

const objects = JSON.parse(fs.readFileSync(0, "utf8"));
const results = objects.map((obj) => {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const load = MODELS[key];
  const name = (obj.metadata || {}).name;
  if (!load) return { kind: obj.kind, name, errors: [`no schema for ${key}`] };
  const Model = load();
  try {
    new Model(obj).validate();
    return { kind: obj.kind, name, errors: [] };
  } catch (err) {
    const details = (err.errors || []).map((e) => `${e.instancePath || "/"} ${e.message}`);
    return { kind: obj.kind, name, errors: details.length ? details : [String(err.message || err)] };
  }
});
process.stdout.write(JSON.stringify(results));
