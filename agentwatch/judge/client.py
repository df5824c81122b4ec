"""`OpenAIJudge`: grades a conversation with one call to an OpenAI-compatible chat completions endpoint.

Plain `httpx` rather than the `openai` package: the judge needs exact control of what the SDK hides — its own
retries (the SDK retries by itself, which would multiply ours and bypass the circuit breaker and the spend
cap), the `Retry-After` header, the HTTP status that decides between retry and give-up, and falling back from
structured outputs on servers that reject `response_format` — and it sends one small request shape. httpx is
small, thread-safe with a shared connection pool, and has separate connect/read timeouts.

A reply is read as a stream, within bounds of its own: its body at most `max_response_bytes` (a larger one is
bad output, read no further), and the whole exchange — the name lookup, connecting, the status line and headers,
the body — within `timeout_s` from the request (`agentwatch.judge.http_bounds`: httpx's timeouts bound each read
and none the lookup, so a server sending its headers or body a byte at a time, or a resolver that hangs, would
otherwise hold the call for as long as it likes).

One request per conversation at temperature 0: the versioned rubric and the transcript (`agentwatch.judge.prompt`). The
reply must be JSON of `VERDICT_SCHEMA`; with `structured_outputs="auto"` the schema is sent as
`response_format: json_schema` and the judge falls back to `json_object`, then to no `response_format`, when the
server answers 400/422 about it. A reply that does not parse gets one repair request (the bad reply and the
error, asking for the JSON object only). Failures never raise: they come back as failed verdicts.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from agentwatch.config import JudgeConfig
from agentwatch.config.prices import PriceLookup
from agentwatch.judge.breaker import CircuitBreaker
from agentwatch.judge.endpoint import (
    CallFailed,
    Redactor,
    about_format,
    certificate_failure,
    parse_retry_after,
    read_completion,
    refuse_plain_http_with_key,
    shown_url,
    split_credentials,
    url_credentials,
)
from agentwatch.judge.http_bounds import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    BodyUndecodable,
    LookupTimeout,
    bound_client,
    read_body,
)
from agentwatch.judge.http_bounds import deadline as exchange_deadline
from agentwatch.judge.prompt import (
    VERDICT_SCHEMA,
    build_messages,
    fingerprint,
    load_rubric,
    parse_verdict,
)
from agentwatch.judge.verdict import (
    JUDGE_BAD_OUTPUT,
    JUDGE_TIMEOUT,
    JUDGE_UNAVAILABLE,
    JudgeVerdict,
)
from agentwatch.wire.schema import Conversation

log = logging.getLogger(__name__)

_MODES = ("json_schema", "json_object", "none")
REPAIR_PROMPT = (
    "Your reply could not be used: {error}. Reply again with only the JSON object "
    '{{"outcome": one of complete, partial_correct, partial_incorrect, hallucinated, abandoned; '
    '"score": a number from 0 to 1; "explanation": a short string}} and nothing else.'
)


_ERROR_BODY_BYTES = 4096  # of a reply that is not 200: its first 300 characters go into the detail


class OpenAIJudge:
    """The judge; `judge(conv)` never raises. Share one instance between threads."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        name: str = "openai",
        prompt_version: str = "v1",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        structured_outputs: str = "auto",
        max_input_tokens: int = 12_000,
        max_output_tokens: int = 400,
        prices: PriceLookup | None = None,
        breaker: CircuitBreaker | None = None,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
        allow_insecure_http: bool = False,
        max_response_bytes: int = 1 << 20,
    ) -> None:
        if (api_key or url_credentials(base_url)) and not allow_insecure_http:
            refuse_plain_http_with_key(base_url)
        self._redact = Redactor([*([api_key] if api_key else []), *url_credentials(base_url)])
        self.model = model
        self.judge_id = f"{name}:{model}:{prompt_version}"
        self.rubric = load_rubric(prompt_version)
        bare_url, credentials = split_credentials(base_url)
        self.url = bare_url.rstrip("/") + "/chat/completions"
        self._where = urlsplit(self.url).netloc  # host and port, as failures name them
        self._auth = httpx.BasicAuth(*credentials) if credentials is not None else None
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        if structured_outputs not in ("auto", *_MODES):
            raise ValueError(
                f"structured_outputs must be auto, {', '.join(_MODES)}; got {structured_outputs!r}"
            )
        self._auto = structured_outputs == "auto"
        self._mode = "json_schema" if self._auto else structured_outputs
        self.max_input_tokens = max_input_tokens
        self.max_output_tokens = max_output_tokens
        self.prices = prices
        self.breaker = breaker or CircuitBreaker()
        self._headers = {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._client = client or httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False)
        bound_client(self._client)
        self._sleep = sleep
        self._clock = clock
        self._rng = rng

    @classmethod
    def from_config(
        cls,
        cfg: JudgeConfig,
        prices: PriceLookup | None = None,
        environ: Mapping[str, str] | None = None,
        **kw: Any,
    ) -> OpenAIJudge:
        """A judge from the `judge:` configuration section; the API key is read from `cfg.api_key_env`."""
        env = os.environ if environ is None else environ
        key = env.get(cfg.api_key_env)
        if not key:
            log.warning(
                "judge: %s is not set; calling %s without an API key",
                cfg.api_key_env,
                shown_url(cfg.base_url),
            )
        return cls(
            base_url=cfg.base_url,
            model=cfg.model,
            api_key=key,
            name=cfg.name,
            prompt_version=cfg.prompt_version,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            backoff_s=cfg.backoff_s,
            max_backoff_s=cfg.max_backoff_s,
            structured_outputs=cfg.structured_outputs,
            max_input_tokens=cfg.max_input_tokens,
            max_output_tokens=cfg.max_output_tokens,
            prices=prices,
            breaker=CircuitBreaker(cfg.breaker_failures, cfg.breaker_reset_s),
            allow_insecure_http=cfg.allow_insecure_http,
            max_response_bytes=cfg.max_response_bytes,
            **kw,
        )

    @property
    def response_format_mode(self) -> str:
        """The `response_format` in use: json_schema, json_object or none (auto may have fallen back)."""
        return self._mode

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    # ------------------------------------------------------------------ protocol

    def messages(self, conv: Conversation) -> list[dict[str, str]]:
        """The chat messages sent for `conv`."""
        return build_messages(conv, self.rubric, self.max_input_tokens)

    def fingerprint(self, conv: Conversation) -> str:
        """Canonical hash of what the judge sees for `conv`."""
        return fingerprint(self.judge_id, self.messages(conv))

    def judge(self, conv: Conversation) -> JudgeVerdict:
        """One verdict for `conv` (one request, plus one repair request if the reply does not parse)."""
        start = self._clock()
        usage = [0, 0, 0]  # input tokens, output tokens, input tokens served from the provider's cache
        messages = self.messages(conv)
        blocked = self.breaker.allow()
        if blocked is not None:
            return JudgeVerdict.failed(JUDGE_UNAVAILABLE, blocked, self.judge_id)
        try:
            outcome, score, explanation = self._ask(messages, usage)
        except CallFailed as exc:
            if exc.code != JUDGE_BAD_OUTPUT:
                self.breaker.failure(exc.code)
            else:
                self.breaker.success()  # the judge answered: it is up, even if the answer is unusable
            return self._verdict(start, usage, failure=exc.code, detail=exc.detail)
        except Exception as exc:  # noqa: BLE001 — whatever the server did, the breaker hears of the call
            detail = self._redact(f"{type(exc).__name__}: {exc}")
            log.warning("judge call failed unexpectedly: %s", detail)
            self.breaker.failure(JUDGE_UNAVAILABLE)
            return self._verdict(start, usage, failure=JUDGE_UNAVAILABLE, detail=detail)
        self.breaker.success()
        return self._verdict(start, usage, outcome=outcome, score=score, explanation=explanation)

    # ------------------------------------------------------------------ internals

    def _verdict(self, start: float, usage: list[int], **fields: Any) -> JudgeVerdict:
        cost = None
        price = self.prices(self.model) if self.prices is not None else None
        if price is not None:
            # the judge's prompt repeats (instructions, rubric): what the provider served from its cache at the
            # cache's price where the table has one, else at the input price (a cap errs high, never low)
            cached = min(usage[2], usage[0]) if price.cache_read_per_mtok is not None else 0
            cost = (
                (usage[0] - cached) * price.input_per_mtok
                + cached * (price.cache_read_per_mtok or 0.0)
                + usage[1] * price.output_per_mtok
            ) / 1e6
        latency = max(self._clock() - start, 0.0)
        if fields.get("failure"):
            return JudgeVerdict.failed(
                fields["failure"],
                self._redact(fields["detail"]),
                self.judge_id,
                input_tokens=usage[0],
                output_tokens=usage[1],
                cost_usd=cost,
                latency_s=latency,
            )
        return JudgeVerdict.graded(
            fields["outcome"],
            fields["score"],
            self._redact(fields["explanation"]),
            self.judge_id,
            input_tokens=usage[0],
            output_tokens=usage[1],
            cost_usd=cost,
            latency_s=latency,
        )

    def _ask(self, messages: list[dict[str, str]], usage: list[int]) -> tuple[str, float, str]:
        content = self._complete(messages, usage)
        try:
            return parse_verdict(content)
        except ValueError as exc:
            first_error = str(exc)
        repair = [
            *messages,
            {"role": "assistant", "content": self._as_sent_back(content or "")},
            {"role": "user", "content": REPAIR_PROMPT.format(error=first_error)},
        ]
        content = self._complete(repair, usage)
        try:
            return parse_verdict(content)
        except ValueError as exc:
            raise CallFailed(
                JUDGE_BAD_OUTPUT, f"{exc} (after one repair attempt; first: {first_error})"
            ) from None

    def _as_sent_back(self, content: str) -> str:
        """The bad reply as the repair request quotes it: no longer than a reply of `max_output_tokens` can be
        (a server ignoring the limit would otherwise have its whole body sent back, and paid for, as input)."""
        room = 4 * self.max_output_tokens
        return content if len(content) <= room else f"{content[:room]}[cut: {len(content) - room} chars]"

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.max_output_tokens,
        }
        if self._mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA},
            }
        elif self._mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _complete(self, messages: list[dict[str, str]], usage: list[int]) -> str | None:
        """The reply's text content; raise CallFailed on timeouts, unavailability, refusals and bad bodies."""
        last = "no attempt"
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                status, headers, body = self._post(self._body(messages))
            except httpx.TimeoutException as exc:
                # a resolver that hangs is said as such: the server never heard of the request
                why = str(exc.__cause__) if isinstance(exc.__cause__, LookupTimeout) else type(exc).__name__
                raise CallFailed(JUDGE_TIMEOUT, f"no response within {self.timeout_s:g} s ({why})") from exc
            except httpx.TransportError as exc:
                refused = certificate_failure(exc, self._where)
                if refused is not None:
                    raise refused from exc  # the same certificate fails every retry the same way
                last = f"connection error: {type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    return read_completion(body, usage)
                text = body.decode("utf-8", "replace")[:300]
                if status in (400, 422) and self._auto and self._mode != "none" and about_format(text):
                    fallback = _MODES[_MODES.index(self._mode) + 1]
                    log.info("judge: server rejects response_format %s; using %s", self._mode, fallback)
                    self._mode = fallback
                    continue  # not a retry: the same request in a form the server accepts
                if status != 429 and status < 500:
                    raise CallFailed(JUDGE_UNAVAILABLE, f"HTTP {status}: {text}")
                last = f"HTTP {status}"
                retry_after = parse_retry_after(headers.get("Retry-After"))
            if attempt >= self.max_retries:
                break
            if retry_after is not None:
                if retry_after > self.max_backoff_s:
                    raise CallFailed(
                        JUDGE_UNAVAILABLE,
                        f"{last}; Retry-After {retry_after:g} s exceeds {self.max_backoff_s:g} s",
                    )
                delay = retry_after + self._rng() * min(self.backoff_s, retry_after * 0.1 + 0.001)
            else:  # full jitter: uniform in [0, min(cap, base * 2^attempt)]
                delay = self._rng() * min(self.max_backoff_s, self.backoff_s * 2**attempt)
            self._sleep(delay)
            attempt += 1
        raise CallFailed(JUDGE_UNAVAILABLE, f"{last} after {self.max_retries} retries")

    def _post(self, request: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        """One request's status, headers and body: the body of a 200 whole (bad output over
        `max_response_bytes`), of another status its start; a timeout once `timeout_s` has passed."""
        deadline = self._clock() + self.timeout_s
        with (
            exchange_deadline(self.timeout_s),
            self._client.stream(
                "POST",
                self.url,
                json=request,
                headers=self._headers,
                auth=self._auth or httpx.USE_CLIENT_DEFAULT,
            ) as r,
        ):
            status = r.status_code
            limit = self.max_response_bytes if status == 200 else _ERROR_BODY_BYTES
            declared = r.headers.get("Content-Length", "")
            if status == 200 and declared.isdigit() and int(declared) > limit:
                raise CallFailed(JUDGE_BAD_OUTPUT, f"reply of {declared} bytes, over {limit}")
            late = CallFailed(JUDGE_TIMEOUT, f"reply not read within {self.timeout_s:g} s")

            def in_time() -> None:
                if self._clock() > deadline:
                    raise late

            try:
                body = read_body(r, limit, in_time, cut=status != 200)
                return status, r.headers, self._redact.body(body)
            except httpx.TimeoutException:
                raise late from None
            except BodyTooLarge:
                raise CallFailed(JUDGE_BAD_OUTPUT, f"reply over {limit} bytes") from None
            except BodyUndecodable as exc:
                if status != 200:
                    return status, r.headers, b""  # an error's detail is not worth more
                raise CallFailed(JUDGE_BAD_OUTPUT, f"reply not readable: {exc}") from None
