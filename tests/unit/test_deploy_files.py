"""Structure of the deployment files that cannot be run here (no Docker engine, no cluster, no Grafana, no OTel
Collector binary): compose, Kubernetes manifests, OTel Collector config, provisioning, scrape config."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from agentwatch.config import load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _load(path: Path) -> dict:
    data: dict = yaml.safe_load(path.read_text())
    return data


def _load_all(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# --------------------------------------------------------------------------- compose


@pytest.fixture(scope="module")
def compose() -> dict:
    return _load(DEPLOY / "compose.yaml")


def test_compose_services(compose: dict) -> None:
    services = compose["services"]
    assert {"kafka", "otel-collector", "agentwatch", "prometheus", "grafana"} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        image = service.get("image", "")
        assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image tag"
    assert services["agentwatch"]["command"][0] == "serve"
    assert "9464:9464" in services["agentwatch"]["ports"]


def test_compose_bind_mounts_exist(compose: dict) -> None:
    named = set(compose.get("volumes", {}))
    mounts = 0
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source in named:
                continue
            assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
            mounts += 1
    assert mounts >= 5
    build = compose["services"]["agentwatch"]["build"]
    assert ((DEPLOY / build["context"]) / build["dockerfile"]).is_file()


def test_compose_depends_on_known_services(compose: dict) -> None:
    services = set(compose["services"])
    for name, service in compose["services"].items():
        assert set(service.get("depends_on", [])) <= services, name


def test_grafana_mounts_match_provisioning(compose: dict) -> None:
    provider = _load(DEPLOY / "grafana" / "provisioning" / "dashboards" / "agentwatch.yml")["providers"][0]
    grafana = compose["services"]["grafana"]
    targets = {v.split(":")[1]: v.split(":")[0] for v in grafana["volumes"]}
    assert targets[provider["options"]["path"]] == "./grafana/dashboards"
    assert (DEPLOY / "grafana" / "dashboards" / "agentwatch.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == provider["options"]["path"] + "/agentwatch.json"


def test_datasource_uid_is_the_dashboard_default() -> None:
    datasource = _load(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")["datasources"][
        0
    ]
    assert datasource["type"] == "prometheus"
    assert datasource["url"] == "http://prometheus:9090"
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "agentwatch.json").read_text())
    variable = next(v for v in dashboard["templating"]["list"] if v["name"] == "datasource")
    assert variable["current"]["value"] == datasource["uid"]


# --------------------------------------------------------------------------- Prometheus scrape config


def test_prometheus_config_passes_promtool(promtool: str) -> None:
    result = subprocess.run(
        [promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_scrapes_exporter_and_collector(compose: dict) -> None:
    config = _load(DEPLOY / "prometheus" / "prometheus.yml")
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert jobs["agentwatch"]["static_configs"][0]["targets"] == ["agentwatch:9464"]
    assert jobs["agentwatch-collector"]["dns_sd_configs"][0]["port"] == 9465
    assert set(config["rule_files"]) == {"recording_rules.yml", "alert_rules.yml"}
    mounts = {v.split(":")[1]: v.split(":")[0] for v in compose["services"]["prometheus"]["volumes"]}
    assert mounts["/etc/prometheus"] == "./prometheus"


# --------------------------------------------------------------------------- agentwatch configuration


def test_agentwatch_config_files_load() -> None:
    settings = load_settings(DEPLOY / "agentwatch.yaml")
    assert "otlp_spans" in settings.collector.input_topics
    assert settings.exporter.metrics_port == 9464


def test_configmap_holds_a_valid_configuration(tmp_path: Path) -> None:
    docs = _load_all(DEPLOY / "kubernetes" / "configmap.yaml")
    assert [d["kind"] for d in docs] == ["ConfigMap"]
    path = tmp_path / "agentwatch.yaml"
    path.write_text(docs[0]["data"]["agentwatch.yaml"])
    settings = load_settings(path)
    assert settings.collector.metrics_port == 9465
    assert settings.exporter.metrics_port == 9464
    assert "otlp_spans" in settings.collector.input_topics


# --------------------------------------------------------------------------- Kubernetes


@pytest.mark.parametrize(
    ("file", "port", "command"), [("collector.yaml", 9465, "collector"), ("exporter.yaml", 9464, "exporter")]
)
def test_kubernetes_deployment_and_service(file: str, port: int, command: str) -> None:
    docs = _load_all(DEPLOY / "kubernetes" / file)
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"Deployment", "Service"}
    deployment, service = kinds["Deployment"], kinds["Service"]
    assert deployment["apiVersion"] == "apps/v1" and service["apiVersion"] == "v1"
    template = deployment["spec"]["template"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= template["metadata"]["labels"].items()
    assert service["spec"]["selector"] == selector
    annotations = template["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(port)
    assert annotations["prometheus.io/path"] == "/metrics"
    container = template["spec"]["containers"][0]
    assert container["args"][0] == command
    assert container["ports"][0]["containerPort"] == port
    assert service["spec"]["ports"][0]["port"] == port
    mount = container["volumeMounts"][0]
    assert container["args"][-1].startswith(mount["mountPath"])
    volume = next(v for v in template["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == "agentwatch-config"


# --------------------------------------------------------------------------- OTel Collector


def test_otel_collector_writes_otlp_proto_to_otlp_spans_and_otlp_logs() -> None:
    config = _load(DEPLOY / "otel-collector" / "config.yaml")
    kafka = config["exporters"]["kafka"]
    assert kafka["traces"] == {"topic": "otlp_spans", "encoding": "otlp_proto"}
    assert kafka["logs"] == {"topic": "otlp_logs", "encoding": "otlp_proto"}
    assert kafka["brokers"] == ["kafka:19092"]
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}
    for name in ("traces", "logs"):
        pipeline = config["service"]["pipelines"][name]
        assert pipeline["receivers"] == ["otlp"] and pipeline["exporters"] == ["kafka"]
        for section in ("receivers", "processors", "exporters"):
            assert set(pipeline.get(section, [])) <= set(config[section]), section
    settings = load_settings(DEPLOY / "agentwatch.yaml")  # what agentwatch reads of it
    assert "otlp_spans" in settings.collector.input_topics and settings.collector.log_topics == ["otlp_logs"]
    assert set(config["service"].get("extensions", [])) <= set(config.get("extensions", {}))


def test_compose_kafka_is_reachable_from_the_host_and_the_network(compose: dict) -> None:
    """Agents on the host reach localhost:9092; containers reach kafka:19092; each advertised on its listener."""
    env = compose["services"]["kafka"]["environment"]
    listeners = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert listeners == {"INTERNAL": "kafka:19092", "HOST": "localhost:9092"}
    assert "9092:9092" in [str(p).split()[0] for p in compose["services"]["kafka"]["ports"]]
    assert (
        compose["services"]["agentwatch"]["environment"]["AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS"]
        == "kafka:19092"
    )


# --------------------------------------------------------------------------- the review service


def test_compose_review_service(compose: dict) -> None:
    review = compose["services"]["review"]
    assert review["profiles"] == ["review"] and review["image"] == compose["services"]["agentwatch"]["image"]
    assert review["command"][:1] == ["review"] and review["command"][-1] == "/etc/agentwatch/agentwatch.yaml"
    assert {"8080:8080", "9466:9466"} <= set(review["ports"])
    assert "review-data" in compose["volumes"]
    data = next(v for v in review["volumes"] if v.startswith("review-data:"))
    settings = load_settings(DEPLOY / "agentwatch.yaml")
    assert settings.review.database_url == f"sqlite:///{data.split(':')[1]}/review.db"
    review_cfg = settings.review
    assert (review_cfg.host, review_cfg.port, review_cfg.metrics_port) == ("0.0.0.0", 8080, 9466)
    assert settings.sampling.review_rate > 0
    assert settings.collector.transcripts_topic == review_cfg.transcripts_topic
    assert set(review["environment"]) == {
        "AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS",
        "AGENTWATCH_REVIEW__REVIEWERS",
        "AGENTWATCH_REVIEW__SESSION_SECRET",
    }
    jobs = {j["job_name"]: j for j in _load(DEPLOY / "prometheus" / "prometheus.yml")["scrape_configs"]}
    assert jobs["agentwatch-review"]["static_configs"][0]["targets"] == ["review:9466"]


def test_kubernetes_review_deployment(tmp_path: Path) -> None:
    kinds = {d["kind"]: d for d in _load_all(DEPLOY / "kubernetes" / "review.yaml")}
    assert set(kinds) == {"Deployment", "PersistentVolumeClaim", "Service"}
    deployment, claim, service = kinds["Deployment"], kinds["PersistentVolumeClaim"], kinds["Service"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    template = deployment["spec"]["template"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= template["metadata"]["labels"].items()
    assert service["spec"]["selector"] == selector
    assert template["metadata"]["annotations"]["prometheus.io/port"] == "9466"
    container = template["spec"]["containers"][0]
    assert container["args"][0] == "review"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 9466, "http": 8080}
    assert {p["port"] for p in service["spec"]["ports"]} == {9466, 8080}
    probe = container["readinessProbe"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/healthz", "http")
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    assert set(env) == {"AGENTWATCH_REVIEW__REVIEWERS", "AGENTWATCH_REVIEW__SESSION_SECRET"}
    assert {ref["name"] for ref in env.values()} == {"agentwatch-review"}
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert volumes["config"]["configMap"]["name"] == "agentwatch-config"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    docs = _load_all(DEPLOY / "kubernetes" / "configmap.yaml")
    path = tmp_path / "agentwatch.yaml"
    path.write_text(docs[0]["data"]["agentwatch.yaml"])
    settings = load_settings(path)
    assert settings.review.database_url == f"sqlite:///{mounts['data']}/review.db"
    assert container["args"][-1].startswith(mounts["config"])
    review = settings.review
    assert (review.port, review.metrics_port, review.host) == (8080, 9466, "0.0.0.0")


# --------------------------------------------------------------------------- image


def test_the_image_build_stage_copies_what_the_build_reads() -> None:
    """deploy/Dockerfile's build stage copies the package, setup.py and the in-tree build backend (pyproject.toml
    `backend-path`), and builds the compiled wheel unless told otherwise."""
    root = DEPLOY.parent
    text = (DEPLOY / "Dockerfile").read_text()
    build_stage = text.split("\nFROM ", 2)[1]
    copied = {
        source.rstrip("*")
        for line in build_stage.splitlines()
        if line.startswith("COPY ") and "--from" not in line
        for source in line.split()[1:-1]
    }
    backend = tomllib.loads((root / "pyproject.toml").read_text())["build-system"]["backend-path"]
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "agentwatch", *backend} <= copied
    assert all((root / name).exists() for name in copied)
    assert "ARG AGENTWATCH_COMPILE=1" in build_stage
