"""Reaching Kafka from the services: connection settings (`security`), why a connection was refused
(`refusals`), the broker's metadata at start (`admin`), topics (`topics`), the producer of records (`producer`),
what a consumer's error events become (`consumer_events`) and the embedded Tansu broker (`broker`).

`security`, `refusals` and `broker` need the standard library only; `admin`, `topics`, `producer` and
`consumer_events` use confluent-kafka (the `service` extra). The SDK's own producer (kafka-python) lives in `agentwatch.sdk.kafka_exporter`.
"""
