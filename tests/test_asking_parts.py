"""The pure parts of apps that ask: an answer checked against an app's schema, and a sampling
request mapped to a chat-completions request and back."""

from __future__ import annotations

import pytest

from actors.apps.upstream import ServerRequestRefused
from actors.asking import AnswerRefused, check_answer
from actors.chat.sampling import sampling_body, sampling_result
from tests.apps.scenario_schemas import DEFAULTS_SCHEMA, ENUMS_SCHEMA, USER_INFO_SCHEMA


def test_an_accepted_answer_must_match_the_schema() -> None:
    user = {"username": "ada", "email": "ada@example.com"}
    assert check_answer(USER_INFO_SCHEMA, "accept", user) == {"action": "accept", "content": user}
    with pytest.raises(AnswerRefused) as missing:
        check_answer(USER_INFO_SCHEMA, "accept", {"username": "ada"})
    assert missing.value.status == 400
    assert "'email' is a required property" in missing.value.message
    with pytest.raises(AnswerRefused) as wrong_type:
        check_answer(DEFAULTS_SCHEMA, "accept", {"age": "thirty"})
    assert "age: 'thirty' is not of type 'integer'" in wrong_type.value.message
    with pytest.raises(AnswerRefused) as not_a_choice:
        check_answer(ENUMS_SCHEMA, "accept", {"untitledSingle": "option9"})
    assert "untitledSingle" in not_a_choice.value.message
    with pytest.raises(AnswerRefused) as not_an_object:
        check_answer(USER_INFO_SCHEMA, "accept", ["ada"])
    assert "'content' must be an object" in not_an_object.value.message


def test_an_accepted_answer_holds_only_values_mcp_carries() -> None:
    """MCP's `ElicitResult` takes a string, a number, a boolean, null or a list of strings for
    a field, declared by the schema or not; anything else would fail the app's call."""
    user = {"username": "ada", "email": "ada@example.com"}
    fine = {**user, "age": 3, "ratio": 0.5, "ok": True, "none": None, "tags": ["a"], "no": []}
    assert check_answer(USER_INFO_SCHEMA, "accept", fine) == {"action": "accept", "content": fine}
    with pytest.raises(AnswerRefused) as an_object:
        check_answer(USER_INFO_SCHEMA, "accept", {**user, "zzz": {"a": 1}})
    assert an_object.value.status == 400
    assert "'zzz' is an object" in an_object.value.message
    assert "a list of strings" in an_object.value.message
    with pytest.raises(AnswerRefused) as lists:
        check_answer(USER_INFO_SCHEMA, "accept", {**user, "n": [1, 2], "m": ["a", None]})
    assert "'n' is a list holding a number; 'm' is a list holding null" in lists.value.message
    with pytest.raises(AnswerRefused) as declared:  # a schema that allows an object
        check_answer({"type": "object", "properties": {"x": {}}}, "accept", {"x": [[]]})
    assert "'x' is a list holding a list" in declared.value.message


def test_decline_cancel_and_url_mode_carry_no_content() -> None:
    assert check_answer(USER_INFO_SCHEMA, "decline", {"ignored": 1}) == {"action": "decline"}
    assert check_answer(USER_INFO_SCHEMA, "cancel", None) == {"action": "cancel"}
    assert check_answer(None, "accept", {"x": 1}) == {"action": "accept"}
    with pytest.raises(AnswerRefused) as bad:
        check_answer(USER_INFO_SCHEMA, "yes", None)
    assert bad.value.status == 400


def test_a_sampling_request_as_a_chat_completions_request() -> None:
    params = {
        "systemPrompt": "Be brief.",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "What is this?"}},
            {"role": "assistant", "content": {"type": "text", "text": "Show me."}},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "This:"},
                    {"type": "image", "mimeType": "image/png", "data": "iVBOR"},
                ],
            },
        ],
        "maxTokens": 50,
        "stopSequences": ["\n\n"],
        "temperature": 0.2,
        "modelPreferences": {"hints": [{"name": "claude"}]},
    }
    assert sampling_body(params, "local-model") == {
        "model": "local-model",
        "stream": True,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is this?"},
            {"role": "assistant", "content": "Show me."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "This:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                ],
            },
        ],
        "max_tokens": 50,
        "stop": ["\n\n"],
        "temperature": 0.2,
    }
    audio = {"role": "user", "content": {"type": "audio", "mimeType": "audio/wav", "data": ""}}
    with pytest.raises(ServerRequestRefused, match="text and images only, not audio"):
        sampling_body({"messages": [audio], "maxTokens": 5}, "m")
    with pytest.raises(ServerRequestRefused, match="no messages"):
        sampling_body({"messages": [], "systemPrompt": "x", "maxTokens": 5}, "m")


def test_the_model_s_answer_as_a_sampling_result() -> None:
    assert sampling_result("cut", "m", "length") == {
        "role": "assistant",
        "content": {"type": "text", "text": "cut"},
        "model": "m",
        "stopReason": "maxTokens",
    }
    assert sampling_result("done", "m", "stop")["stopReason"] == "endTurn"
