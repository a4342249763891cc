"""Model backends: OpenAI, Anthropic, any OpenAI-compatible server, and a fake.

Build one from an address with `make_backend("anthropic:claude-haiku-4-5")`; every backend
implements `Backend.complete(ModelRequest) -> ModelResponse` and raises `BackendError` with
a classified `error_class` after its retries.
"""

from harness_aria.backends.base import (
    Backend,
    BackendError,
    CredentialsError,
    ErrorClass,
    Message,
    ModelRequest,
    ModelResponse,
)
from harness_aria.backends.fake import DEFAULT_RESPONSES, FakeBackend
from harness_aria.backends.registry import (
    BACKENDS,
    check_credentials,
    make_backend,
    parse_address,
    valid_forms,
)
from harness_aria.backends.settings import DEFAULT_PRICES, BackendSettings, ModelPrice

__all__ = [
    "BACKENDS",
    "DEFAULT_PRICES",
    "DEFAULT_RESPONSES",
    "valid_forms",
    "Backend",
    "BackendError",
    "BackendSettings",
    "CredentialsError",
    "ErrorClass",
    "FakeBackend",
    "Message",
    "ModelPrice",
    "ModelRequest",
    "ModelResponse",
    "check_credentials",
    "make_backend",
    "parse_address",
]
