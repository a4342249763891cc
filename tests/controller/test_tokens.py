"""Token counts for estimates: each provider's own vocabulary where a package ships it."""

from __future__ import annotations

from controller.tokens import count_tokens, method


def test_openai_models_are_counted_with_their_own_vocabulary() -> None:
    assert method("gpt-4.1-mini") == "o200k_base"
    assert method("openai:gpt-4.1-mini") == "o200k_base"
    assert method("gpt-4o") == "o200k_base" and method("o4-mini") == "o200k_base"
    assert method("gpt-5-mini") == "o200k_base"
    assert method("gpt-4") == "cl100k_base" and method("gpt-3.5-turbo") == "cl100k_base"
    # o200k_base's ids of "hello world" are [24912, 2375]; cl100k_base's [15339, 1917]
    assert count_tokens("hello world", "gpt-4.1-mini") == 2
    assert count_tokens("hello world", "gpt-4") == 2
    # numbers and punctuation are several tokens each: a quarter of the characters errs low
    coords = "Red cafeteria (33.5, 19.5) now; " * 10
    assert count_tokens(coords, "gpt-4.1-mini") > len(coords) // 4


def test_a_model_without_a_shipped_vocabulary_is_counted_as_a_quarter_of_its_characters() -> None:
    assert method("claude-haiku-4-5") == "characters / 4"
    assert method("openai-compatible:qwen2.5-vl") == "characters / 4"
    assert method(None) == "characters / 4"
    assert count_tokens("x" * 41, "claude-haiku-4-5") == 10


def test_special_token_text_is_counted_as_plain_text() -> None:
    assert count_tokens("<|endoftext|>", "gpt-4.1-mini") > 1
