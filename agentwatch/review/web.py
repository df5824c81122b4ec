"""The review pages: sign-in, the queue, a series' failing conversations, and a conversation to label
(Starlette, Jinja2 templates).

Everything is rendered on the server; the only script is the keyboard handling, inline under a per-response
nonce (Content-Security-Policy allows nothing else, and nothing from another origin). Reads need a signed-in
session or an `Authorization` header (Bearer token, or Basic name:password); writes need a signed-in session
and the session's CSRF token. Anonymous reads get 401 (the sign-in page), anonymous or forged writes 403.
Sessions live in the store (`review.sessions`): the signed cookie only carries a random token, and signing out
deletes its row. Sign-in checks are throttled before any hashing (`review.signin`); path and query integers
are validated (404 or 400, never an error of the database). Request bodies over `max_body_bytes` get 413.
The judge's verdict, score and explanation are rendered only once the conversation has a label (no anchoring).

This module holds the application and its routes; what they read from a request (client, CSRF token, redirect
target, filters) is `review.request_values`, the templates and their filters `review.templating`.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from agentwatch.config import ReviewConfig
from agentwatch.review.auth import Reviewers
from agentwatch.review.body_limit import BodyLimit
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.outage import STORE_DOWN, unavailable
from agentwatch.review.params import MAX_OFFSET, integer
from agentwatch.review.request_values import (
    client_of,
    csrf_ok,
    csrf_token,
    filter_params,
    filter_query,
    filters_of,
    local_target,
)
from agentwatch.review.sessions import Sessions
from agentwatch.review.signin import SignIn
from agentwatch.review.store import Store
from agentwatch.review.tables import MAX_ROW_ID
from agentwatch.review.templating import page_templates
from agentwatch.review.throttle import Refused
from agentwatch.review.web_failing import DEFAULT_WINDOW, failing_context
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.review_records import judge_outcome
from agentwatch.wire.schema import Conversation, Outcome

log = logging.getLogger(__name__)

MAX_NOTE = 2000
OUTCOME_TEXT: tuple[tuple[str, str], ...] = (
    ("complete", "the task was done and everything the agent said is right"),
    ("partial_correct", "part of the task was done; what the agent said is right"),
    ("partial_incorrect", "part of the task was done, or something the agent said is wrong"),
    ("hallucinated", "the agent claims facts or actions that the transcript does not support"),
    ("abandoned", "no answer, an error, a loop, or the agent gave up"),
)


class ReviewApp:
    """The pages over a `Store`; `app` is the ASGI application."""

    def __init__(
        self,
        store: Store,
        config: ReviewConfig,
        stats: ReviewStats,
        *,
        clock: Callable[[], float] = time.time,
        on_saved: Callable[[], None] = lambda: None,
        failing_window: str = DEFAULT_WINDOW,
        failing_per_minute: int | None = None,
    ) -> None:
        self.store = store
        self.failing_window = failing_window  # the failing list's window when a link names none
        self.failing_per_minute = (
            failing_per_minute  # collector.failing_transcripts_per_minute, said on the list
        )
        self.config = config
        self.stats = stats
        self.reviewers = Reviewers(config.reviewers)
        self.sessions = Sessions(store.engine, config.session_max_age_s, config.session_idle_s, clock)
        self.signin = SignIn(self.reviewers, self.sessions, stats, config)
        self._clock = clock
        self._on_saved = on_saved
        self.templates = page_templates()
        secret = (
            config.session_secret.get_secret_value()
            if config.session_secret is not None
            else secrets.token_urlsafe(32)
        )
        self.app = Starlette(
            routes=[
                Route("/", self.queue_page),
                Route("/login", self.login_page, methods=["GET"]),
                Route("/login", self.login, methods=["POST"]),
                Route("/logout", self.logout, methods=["POST"]),
                Route("/failing", self.failing_page),
                Route("/c/{row}", self.conversation_page),
                Route("/c/{row}/label", self.label, methods=["POST"]),
                Route("/healthz", self.health),
            ],
            exception_handlers=dict.fromkeys(STORE_DOWN, unavailable(stats.store)),
            middleware=[
                Middleware(BodyLimit, max_bytes=config.max_body_bytes),
                Middleware(
                    SessionMiddleware,
                    secret_key=secret,
                    session_cookie="agentwatch_review",
                    max_age=config.session_max_age_s,
                    same_site="lax",
                    https_only=config.secure_cookies,
                ),
            ],
        )

    # ------------------------------------------------------------------ helpers

    def _page(self, request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        nonce = secrets.token_urlsafe(16)
        policy = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        headers = {
            "Content-Security-Policy": policy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store",
        }
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="agentwatch review"'
        reviewer = getattr(request.state, "reviewer", None)
        context = {"nonce": nonce, "csrf": csrf_token(request), "reviewer": reviewer, **context}
        return self.templates.TemplateResponse(request, name, context, status_code=status, headers=headers)

    async def _signed_in(self, request: Request) -> str | None:
        """The reviewer of the request's live server-side session, else None (kept on `request.state`)."""
        token = request.session.get("sid")
        name = await run_in_threadpool(self.sessions.reviewer, token) if token else None
        name = name if name in self.reviewers.names else None  # a reviewer removed from the configuration
        request.state.reviewer = name
        return name

    async def _reader(self, request: Request) -> str | Response:
        """Who is reading: the signed-in reviewer, or the one an Authorization header names; else the refusal."""
        name = await self._signed_in(request)
        header = request.headers.get("authorization")
        if name is None and header:
            try:
                name = await self.signin.from_header(client_of(request), header)
            except Refused as refused:
                return _refused(refused)
        return name if name is not None else self._refuse(request)

    def _refuse(self, request: Request) -> Response:
        self.stats.count_refused("read")
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return self._page(request, "login.html", {"next": target, "error": None}, 401)

    async def _writer(self, request: Request) -> tuple[str | None, Any]:
        """The signed-in reviewer of a form post with the session's CSRF token (else None), and the form."""
        form = await request.form()
        name = await self._signed_in(request)
        if name is None or not csrf_ok(request, form):
            self.stats.count_refused("write")
            return None, form
        return name, form

    # ------------------------------------------------------------------ sign-in

    async def login_page(self, request: Request) -> Response:
        """The sign-in form."""
        if await self._signed_in(request):
            return RedirectResponse("/", 303)
        return self._page(
            request, "login.html", {"next": local_target(request.query_params.get("next")), "error": None}
        )

    async def login(self, request: Request) -> Response:
        """Check the name and secret; on success a new session (and CSRF token)."""
        form = await request.form()
        if not csrf_ok(request, form):
            self.stats.count_refused("write")
            return PlainTextResponse("forbidden: the sign-in form expired; reload the page", 403)
        name, secret = str(form.get("name", "")).strip()[:256], str(form.get("secret", ""))[:1024]
        next_url = local_target(str(form.get("next", "")))
        try:
            reviewer = await self.signin.check(client_of(request), name, secret) if name and secret else None
        except Refused as refused:
            wait = f"{refused.retry_after_s:.0f} s" if refused.reason == "throttled" else "a moment"
            context = {"next": next_url, "error": f"Too many sign-in attempts: try again in {wait}."}
            page = self._page(request, "login.html", context, 429 if refused.reason == "throttled" else 503)
            page.headers["Retry-After"] = str(max(1, round(refused.retry_after_s)))
            return page
        if reviewer is None:
            if not (name and secret):
                self.stats.count_signin("form", "failed")
            return self._page(
                request, "login.html", {"next": next_url, "error": "Wrong name or secret."}, 401
            )
        token = await run_in_threadpool(self.sessions.create, reviewer)
        request.session.clear()  # a new session (and CSRF token) at every sign-in: no fixation
        request.session.update(sid=token, csrf=secrets.token_urlsafe(24))
        return RedirectResponse(next_url or "/", 303)

    async def logout(self, request: Request) -> Response:
        """End the session: its row leaves the store, so a copy of the cookie signs nothing in any more."""
        name, _ = await self._writer(request)
        if name is None:
            return PlainTextResponse("forbidden", 403)
        await run_in_threadpool(self.sessions.revoke, request.session.get("sid"))
        request.session.clear()
        log.info("%s signed out", name)
        return RedirectResponse("/login", 303)

    # ------------------------------------------------------------------ pages

    async def queue_page(self, request: Request) -> Response:
        """The unlabelled conversations, oldest first, with filters and the count of what is left."""
        reader = await self._reader(request)
        if isinstance(reader, Response):
            return reader
        filters = filters_of(request)
        offset = integer(request.query_params.get("offset", "0"), MAX_OFFSET)
        if offset is None:
            return PlainTextResponse(f"offset must be an integer from 0 to {MAX_OFFSET:,}\n", 400)
        size = self.config.page_size
        items, total = await run_in_threadpool(self.store.queue, filters, size, offset)
        choices = await run_in_threadpool(self.store.choices)
        query = filter_query(filters)
        more = None
        if offset + size < total:
            more = "/?" + urlencode({**filter_params(filters), "offset": offset + size})
        return self._page(
            request,
            "queue.html",
            {
                "items": items,
                "total": total,
                "choices": choices,
                "query": query,
                "more": more,
                "page_size": size,
                "filters": {"agent": filters.agent, "version": filters.version, "task": filters.task},
                "filtered": any((filters.agent, filters.version, filters.task)),
            },
        )

    async def failing_page(self, request: Request) -> Response:
        """The failing conversations of a series in a window (what an alert's link opens)."""
        reader = await self._reader(request)
        if isinstance(reader, Response):
            return reader
        params = dict(request.query_params)
        context = await run_in_threadpool(
            failing_context, self.store, params, self.config.page_size, self._clock(), self.failing_window
        )
        context["failing_days"] = min(self.config.failing_retention_days, self.config.retention_days)
        context["failing_per_minute"] = self.failing_per_minute
        return self._page(request, "failing.html", context)

    async def conversation_page(self, request: Request) -> Response:
        """One conversation: its whole transcript, the label form, and — once labelled — the verdicts."""
        reader = await self._reader(request)
        if isinstance(reader, Response):
            return reader
        row = integer(request.path_params["row"], MAX_ROW_ID)
        if row is None:
            return PlainTextResponse("no such conversation\n", 404)
        return await self._conversation(request, row)

    async def _conversation(
        self, request: Request, row: int, error: str | None = None, status: int = 200
    ) -> Response:
        stored = await run_in_threadpool(self.store.get, row)
        if stored is None:
            return PlainTextResponse("no such conversation (deleted by retention?)", 404)
        filters = filters_of(request)
        prev_id, next_id = await run_in_threadpool(self.store.neighbours, row, filters)
        _, left = await run_in_threadpool(self.store.queue, filters, 0, 0)
        query = filter_query(filters)
        conv = model_from_json(Conversation, stored.transcript) if stored.transcript else None
        relabel = request.query_params.get("relabel") == "1"
        decided = bool(stored.labels)
        context: dict[str, Any] = {
            "stored": stored,
            "conv": conv,
            "score": stored.latest_score,
            "labels": stored.labels,
            "show_form": not decided or relabel or error is not None,
            "error": error,
            "saved": request.query_params.get("saved") == "1" and decided,
            "outcomes": OUTCOME_TEXT,
            "query": query,
            "query_relabel": "?" + urlencode({**filter_params(filters), "relabel": 1}),
            "queue_url": "/" + query,
            "left": left,
            "prev_url": f"/c/{prev_id}{query}" if prev_id is not None else None,
            "next_url": f"/c/{next_id}{query}" if next_id is not None else None,
            "back_url": local_target(request.query_params.get("back"))
            or None,  # e.g. the failing list it came from
        }
        # Opened from a failing list (or held only because it failed): the reader has seen why it failed, so
        # the page says it at once, and a label saved here is not blind.
        context["seen_why"] = stored.sample == "failing" or context["back_url"] is not None
        if decided:  # only now: what the judge and the rules said (no anchoring before the decision)
            context.update(first=stored.first_score, judge_outcome=_value(judge_outcome(stored.first_score)))
        return self._page(request, "conversation.html", context, status)

    async def label(self, request: Request) -> Response:
        """Save a label (signed-in reviewer, CSRF token), then show the conversation with the verdicts."""
        reviewer, form = await self._writer(request)
        if reviewer is None:
            return PlainTextResponse("forbidden: sign in, and send the form from the page", 403)
        row = integer(request.path_params["row"], MAX_ROW_ID)
        if row is None:
            return PlainTextResponse("no such conversation\n", 404)
        outcome = str(form.get("outcome", ""))
        if outcome not in {value for value, _ in OUTCOME_TEXT}:
            return await self._conversation(request, row, "Pick one of the five outcome classes.", 400)
        note = str(form.get("note", "")).strip()[:MAX_NOTE]
        stored = await run_in_threadpool(self.store.get, row)
        if stored is None:
            return PlainTextResponse("no such conversation (deleted by retention?)", 404)
        blind = form.get("blind") == "1"  # what the page says of its reader; the store decides the rest
        try:
            record = await run_in_threadpool(
                self.store.save_label, row, reviewer, Outcome(outcome), note, blind, self._clock()
            )
        except KeyError:  # deleted between the read above and the save's transaction
            return PlainTextResponse("no such conversation (deleted by retention?)", 404)
        if record.label_id in {saved.label_id for saved in stored.labels}:  # the same label sent again
            log.info("%s sent their label of %s again: saved once", reviewer, record.conversation_id)
        else:
            self.stats.count_label(outcome)
            self._on_saved()
            log.info(
                "%s labelled %s (%s) %s%s",
                reviewer,
                record.conversation_id,
                record.agent,
                outcome,
                f", revision {record.revision}" if record.revision is not None else ", no revision needed",
            )
        params = {**filter_params(filters_of(request)), "saved": 1}
        return RedirectResponse(f"/c/{row}?{urlencode(params)}", 303)

    async def health(self, request: Request) -> Response:
        """200 when the store answers and no loop's last write failed (readiness; no sign-in, nothing shown)."""
        try:
            await run_in_threadpool(self.store.pending)
        except Exception as exc:  # noqa: BLE001 - any database error means not ready
            log.warning("health check: store unreachable: %s", exc)
            return PlainTextResponse("store unreachable\n", 503)
        down = self.stats.store.down()
        if down:
            return PlainTextResponse(f"store failing: {', '.join(sorted(down))}\n", 503)
        return PlainTextResponse("ok\n")


def _refused(refused: Refused) -> Response:
    status = 429 if refused.reason == "throttled" else 503
    return PlainTextResponse(
        f"too many sign-in attempts: try again in {refused.retry_after_s:.0f} s\n",
        status,
        headers={"Retry-After": str(max(1, round(refused.retry_after_s)))},
    )


def _value(outcome: Outcome | None) -> str | None:
    return None if outcome is None else str(outcome.value)
