"""Reaching Kafka from the services: connection settings (`security`), why a connection was refused
(`refusals`), the broker's metadata at start (`admin`), topics (`topics`), the producer of records (`producer`)
and the embedded Tansu broker (`broker`).

`security`, `refusals` and `broker` need the standard library only; `admin`, `topics` and `producer` use confluent-kafka
(the `service` extra). The SDK's own producer (kafka-python) lives in `agentwatch.sdk.kafka_exporter`.
"""
