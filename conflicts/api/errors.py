"""How the API refuses: every validation error names the field as the client wrote it ("retrieved[2].ref"),
and each refusal the services raise (unknown refs, a turn reported twice differently, ...) has its status."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, Throttled, ValidationError

from conflicts import services
from kbreview.middleware import database_unavailable_response


def client_field(loc: tuple) -> str:
    """("retrieved", 2, "ref") -> "retrieved[2].ref": the field as the client wrote it."""
    name = ""
    for part in loc:
        if isinstance(part, int):
            name += f"[{part}]"
        else:
            name += f".{part}" if name else str(part)
    return name


def field_error(source: str, loc: tuple, msg: str, kind: str = "value_error") -> dict[str, Any]:
    return {"loc": [source, *loc], "field": client_field(loc), "msg": msg, "type": kind}


class KbreviewApi(NinjaAPI):
    def get_openapi_operation_id(self, operation) -> str:
        """conflicts_api_<function>, the ids clients generated code from when the operations lived in
        conflicts/api.py (ninja's default names the defining module)."""
        return f"conflicts_api_{operation.view_func.__name__}"

    def validation_error_from_error_contexts(self, error_contexts):
        """Locations name the client's fields (["body", "retrieved", 2, "ref"], field "retrieved[2].ref"),
        not this code's parameter names (["body", "payload", ...])."""
        errors = []
        for context in error_contexts:
            model = context.model
            source = model.__ninja_param_source__
            for error in context.pydantic_validation_error.errors(include_url=False, include_input=False):
                loc = tuple(model.__ninja_flatten_map_reverse__.get(error["loc"], error["loc"]))
                if source == "body" and len(model.model_fields) == 1 and loc and loc[0] in model.model_fields:
                    loc = loc[1:]
                errors.append(field_error(source, loc, error["msg"].removeprefix("Value error, "), error["type"]))
        return ValidationError(errors)


class FieldProblem(Exception):
    """A value that passed the schema but cannot be accepted (e.g. a duplicate ref): 422 naming it."""

    def __init__(self, source: str, loc: tuple, msg: str):
        self.error = field_error(source, loc, msg)
        super().__init__(msg)


def error_handlers_add(api: NinjaAPI) -> None:
    """The answers `api` gives to what it refuses, beside ninja's own."""
    # Ninja would answer these itself (a traceback under DEBUG); the project's 503 answer applies here too.
    api.add_exception_handler(OperationalError, database_unavailable_response)
    api.add_exception_handler(InterfaceError, database_unavailable_response)

    @api.exception_handler(AuthenticationError)
    def _unauthenticated(request, exc: AuthenticationError):
        response = api.create_response(request, {"detail": "a valid API token is required (Authorization: Bearer <token>)"}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="kbreview"'
        return response

    @api.exception_handler(Throttled)
    def _throttled(request, exc: Throttled):
        return api.create_response(
            request, {"detail": f"rate limit of {settings.API_RATE_LIMIT} requests per {settings.API_RATE_WINDOW_S} s reached"}, status=429
        )

    @api.exception_handler(FieldProblem)
    def _field_problem(request, exc: FieldProblem):
        return api.create_response(request, {"detail": [exc.error]}, status=422)

    @api.exception_handler(services.UnknownArticleRefs)
    def _unknown_refs(request, exc: services.UnknownArticleRefs):
        detail = [
            {**field_error("body", ("retrieved",), f"unknown article refs: {', '.join(exc.refs)}"), "refs": exc.refs}
        ]
        return api.create_response(request, {"detail": detail}, status=422)

    @api.exception_handler(services.TurnMismatch)
    def _turn_mismatch(request, exc: services.TurnMismatch):
        return api.create_response(request, {"detail": str(exc), "fields": exc.fields}, status=409)

    @api.exception_handler(services.ReplyAlreadyRecorded)
    def _reply_recorded(request, exc: services.ReplyAlreadyRecorded):
        return api.create_response(request, {"detail": str(exc), "fields": ["reply"]}, status=409)
