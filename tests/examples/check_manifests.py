#!/usr/bin/env python3
"""Static checks of the job manifests in examples/platform against the platform's rules.

    check_manifests.py volcano-job.yaml mpijob.yaml   # exit 0 when every check passes
    check_manifests.py --self-test volcano-job.yaml mpijob.yaml
        breaks each manifest in known ways and exits 0 only if every breakage is reported.

Rules (docs/examples.md, ../../shared platform contract): one master with replicas 1; the same
image and the same `gj-mpirun <absolute script>` command in every pod; the GJ_TRAINING_* values
agree with replicas and resources; MPI_NP / MPI_HOSTS / NCCL_IB_* never set by the user; when
both roles use GPUs, same count and card type; np > 0; Volcano: mpi/ssh/svc plugins naming the
tasks, gang size = all pods. A Kubeflow MPIJob (v2beta1) is zero-configuration: no GJ_TRAINING_*
and no MPI_HOST at all (gj-mpirun reads K_MPI_JOB_ROLE and the operator's hostfile), slotsPerWorker
= a worker's GPUs (CPUs without GPUs), the ssh Secret mounted where gj-mpirun looks (/root/.ssh or
GJ_SSH_DIR), a flavour gj-mpirun runs.
"""

import copy
import sys

import yaml

GPU = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
PLATFORM_ENV = ["GJ_TRAINING_ROLE", "GJ_TRAINING_VC_JOB_NAME", "GJ_TRAINING_POD_NAME",
                "GJ_TRAINING_MASTER_CPU_LIMIT", "GJ_TRAINING_MASTER_GPU_LIMIT", "GJ_TRAINING_MASTER_REPLICAS",
                "GJ_TRAINING_WORKER_CPU_LIMIT", "GJ_TRAINING_WORKER_GPU_LIMIT", "GJ_TRAINING_WORKER_REPLICAS"]


def roles(doc):
    """[(role, task name, replicas, pod spec)] for a Volcano Job or an MPIJob."""
    if doc.get("kind") == "Job" and doc.get("apiVersion", "").startswith("batch.volcano.sh/"):
        out = []
        for t in doc["spec"]["tasks"]:
            spec = t["template"]["spec"]
            env = env_of(spec["containers"][0])
            out.append((env.get("GJ_TRAINING_ROLE"), t["name"], t.get("replicas", 1), spec))
        return out
    if doc.get("kind") == "MPIJob":
        specs = doc["spec"]["mpiReplicaSpecs"]
        return [("master" if name == "Launcher" else "worker", name, s.get("replicas", 1), s["template"]["spec"])
                for name, s in specs.items()]
    raise ValueError(f"kind={doc.get('kind')!r} apiVersion={doc.get('apiVersion')!r} is neither a Volcano Job "
                     "nor a Kubeflow MPIJob")


def env_of(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def quantity(resources, key):
    v = resources.get("limits", {}).get(key, 0)
    return int(str(v))


def check(doc):
    """Returns the list of problems, each naming the field and the value seen."""
    errs = []
    rs = roles(doc)
    masters = [r for r in rs if r[0] == "master"]
    workers = [r for r in rs if r[0] == "worker"]
    if len(masters) != 1 or masters[0][2] != 1:
        errs.append(f"need exactly one master task with replicas 1, got {[(r[1], r[2]) for r in masters]}")
    if len(masters) + len(workers) != len(rs):
        errs.append(f"every task needs GJ_TRAINING_ROLE master or worker, got {[(r[1], r[0]) for r in rs]}")
    if not masters or len(masters) + len(workers) != len(rs):
        return errs
    commands, images, per_role = set(), set(), {}
    for role, name, replicas, spec in rs:
        c = spec["containers"][0]
        cmd = c.get("command", [])
        commands.add(tuple(cmd))
        images.add(c.get("image"))
        if len(cmd) < 2 or not cmd[0].startswith("/") or not cmd[0].endswith("/gj-mpirun") or not cmd[1].startswith("/"):
            errs.append(f"{name}: command {cmd} is not [/abs/path/gj-mpirun, /abs/path/script, ...]")
        env = env_of(c)
        for bad in [k for k in env if k in ("MPI_NP", "MPI_HOSTS") or k.startswith("NCCL_IB_")]:
            errs.append(f"{name}: env {bad} is computed or platform-written; remove it")
        if doc["kind"] == "MPIJob":
            for bad in [k for k in env if k in PLATFORM_ENV or k == "MPI_HOST"]:
                errs.append(f"{name}: env {bad} is the Volcano platform's; an MPIJob needs no configuration, remove it")
        else:
            for k in PLATFORM_ENV:
                if k not in env:
                    errs.append(f"{name}: env {k} missing")
        res = c.get("resources", {})
        if res.get("limits", {}).get(GPU) != res.get("requests", {}).get(GPU, res.get("limits", {}).get(GPU)):
            errs.append(f"{name}: {GPU} requests {res.get('requests', {}).get(GPU)} != limits {res['limits'].get(GPU)}")
        per_role[role] = {"replicas": replicas, "gpu": quantity(res, GPU), "cpu": quantity(res, "cpu"),
                          "product": spec.get("nodeSelector", {}).get(GPU_PRODUCT), "env": env, "name": name}
    if len(commands) != 1:
        errs.append(f"every pod must run the same command, got {sorted(commands)}")
    if len(images) != 1:
        errs.append(f"every pod must use the same image, got {sorted(map(str, images))}")
    per_role.setdefault("worker", {"replicas": 0, "gpu": 0, "cpu": 0, "product": None, "env": {}, "name": "-"})

    for role, r in per_role.items():
        for who, v in per_role.items():
            for field, key in (("REPLICAS", "replicas"), ("GPU_LIMIT", "gpu"), ("CPU_LIMIT", "cpu")):
                var = f"GJ_TRAINING_{who.upper()}_{field}"
                if var in r["env"] and str(r["env"][var]) != str(v[key]):
                    errs.append(f"{r['name']}: {var}={r['env'][var]} but {who} has {key} {v[key]}")
    m, w = per_role["master"], per_role["worker"]
    if m["gpu"] > 0 and w["gpu"] > 0 and w["replicas"] > 0:
        if m["gpu"] != w["gpu"] or m["product"] != w["product"]:
            errs.append(f"both roles use GPUs: cards per node {m['gpu']} vs {w['gpu']} and type {m['product']} vs "
                        f"{w['product']} must match")
    if m["gpu"] == 0 and w["gpu"] == 0:
        np_ = m["replicas"] * m["cpu"] + w["replicas"] * w["cpu"]
    elif m["gpu"] > 0 and w["gpu"] > 0:
        np_ = m["replicas"] * m["gpu"] + w["replicas"] * w["gpu"]
    elif m["gpu"] == 0:
        np_ = w["replicas"] * w["gpu"]
    else:
        np_ = m["replicas"] * m["gpu"]
    if np_ <= 0:
        errs.append(f"np = {np_}: no rank would run")

    if doc["kind"] == "Job":
        plugins = doc["spec"].get("plugins", {})
        for p in ("mpi", "ssh", "svc"):
            if p not in plugins:
                errs.append(f"spec.plugins lacks {p}")
        mpi_args = plugins.get("mpi") or []
        for flag, want in (("--master=", m["name"]), ("--worker=", w["name"])):
            if f"{flag}{want}" not in mpi_args and not (flag == "--worker=" and w["replicas"] == 0):
                errs.append(f"spec.plugins.mpi {mpi_args} lacks {flag}{want}")
        total = sum(r[2] for r in rs)
        if doc["spec"].get("minAvailable") != total:
            errs.append(f"spec.minAvailable={doc['spec'].get('minAvailable')} but the job has {total} pods")
        if "MPI_HOST" in m["env"]:
            errs.append("master env MPI_HOST is written by the mpi plugin; remove it")
    else:
        if not doc.get("apiVersion", "").startswith("kubeflow.org/v2"):
            errs.append(f"apiVersion={doc.get('apiVersion')!r}: gj-mpirun reads mpi-operator v2's environment "
                        "(kubeflow.org/v2beta1)")
        slots = w["gpu"] if w["gpu"] > 0 else w["cpu"]
        if doc["spec"].get("slotsPerWorker") != slots:
            errs.append(f"spec.slotsPerWorker={doc['spec'].get('slotsPerWorker')} but a worker has {slots} slots")
        impl = doc["spec"].get("mpiImplementation", "OpenMPI")
        if impl not in ("OpenMPI", "Intel", "MPICH"):
            errs.append(f"spec.mpiImplementation={impl!r} is not OpenMPI, Intel or MPICH")
        ssh_dirs = {str(r["env"].get("GJ_SSH_DIR", "/root/.ssh")) for r in per_role.values() if r["name"] != "-"}
        mount = doc["spec"].get("sshAuthMountPath", "/root/.ssh")
        if ssh_dirs != {mount}:
            errs.append(f"spec.sshAuthMountPath={mount!r} but gj-mpirun reads its keys from {sorted(ssh_dirs)} "
                        "(set GJ_SSH_DIR to the mount path)")
    return errs


def container(doc, role):
    for r, _, _, spec in roles(doc):
        if r == role:
            return spec["containers"][0]
    raise KeyError(role)


def set_env(doc, role, name, value):
    container(doc, role).setdefault("env", []).append({"name": name, "value": value})


def breakages(kind):
    """(what, mutate) pairs, each of which must make check() report at least one problem."""
    def worker_gpus(d):
        container(d, "worker")["resources"].setdefault("limits", {})[GPU] = "4"
        container(d, "worker")["resources"].setdefault("requests", {})[GPU] = "4"
    common = [
        ("user sets MPI_NP", lambda d: set_env(d, "master", "MPI_NP", "8")),
        ("user sets NCCL_IB_HCA", lambda d: set_env(d, "worker", "NCCL_IB_HCA", "mlx5_0")),
        ("different image on the worker", lambda d: container(d, "worker").update(image="other:1")),
        ("command without gj-mpirun", lambda d: container(d, "master").update(command=["bash", "run.sh"])),
        ("relative script path", lambda d: container(d, "master").update(
            command=[container(d, "master")["command"][0], "train.py"])),
    ]
    if kind == "MPIJob":
        return common + [
            ("worker GPU count differs from slotsPerWorker", worker_gpus),
            ("platform variable in an MPIJob", lambda d: set_env(d, "master", "GJ_TRAINING_ROLE", "master")),
            ("MPI_HOST in an MPIJob", lambda d: set_env(d, "master", "MPI_HOST", "a.b")),
            ("ssh Secret mounted elsewhere", lambda d: d["spec"].update(sshAuthMountPath="/home/mpi/.ssh")),
            ("unknown mpiImplementation", lambda d: d["spec"].update(mpiImplementation="MVAPICH")),
            ("v1 MPIJob", lambda d: d.update(apiVersion="kubeflow.org/v1")),
        ]
    return common + [
        ("worker GPU count differs from the env", worker_gpus),
        ("GJ_TRAINING_ROLE missing", lambda d: container(d, "worker").update(
            env=[e for e in container(d, "worker")["env"] if e["name"] != "GJ_TRAINING_ROLE"])),
    ]


def self_test(path, doc):
    missed = []
    for what, mutate in breakages(doc["kind"]):
        broken = copy.deepcopy(doc)
        mutate(broken)
        if not check(broken):
            missed.append(what)
    if doc["kind"] == "Job":
        for what, mutate in (("ssh plugin removed", lambda d: d["spec"]["plugins"].pop("ssh")),
                             ("master replicas 2", lambda d: d["spec"]["tasks"][0].update(replicas=2)),
                             ("minAvailable too small", lambda d: d["spec"].update(minAvailable=1))):
            broken = copy.deepcopy(doc)
            mutate(broken)
            if not check(broken):
                missed.append(what)
    for what in missed:
        print(f"{path}: self-test: breakage not detected: {what}", file=sys.stderr)
    return not missed


def main(argv):
    selftest = "--self-test" in argv
    paths = [a for a in argv if a != "--self-test"]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        errs = check(doc)
        for e in errs:
            print(f"{path}: {e}", file=sys.stderr)
        ok = ok and not errs
        if selftest and not errs:
            ok = self_test(path, doc) and ok
        if not errs:
            print(f"{path}: ok ({doc['kind']}, roles {[(r[0], r[1], r[2]) for r in roles(doc)]})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
