"""agents.llm.config: an LLMConfig per purpose from settings (through agents.configuration)."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.configuration import llm_config_for
from agents.llm.config import LLMConfig


def test_config_is_none_without_a_base_url(settings):
    settings.LLM = {"base_url": None, "api_key": "k", "model": "m", "timeout_s": 3, "json_mode": "json_schema"}
    settings.LLM_PURPOSES = {"detection": {"base_url": None}}
    assert llm_config_for("detection") is None


def test_each_purpose_key_falls_back_to_the_shared_setting(settings):
    settings.LLM = {"base_url": "http://shared/v1", "api_key": "shared-key", "model": "big",
                    "timeout_s": 30.0, "json_mode": "json_schema"}
    settings.LLM_PURPOSES = {
        "detection": {"base_url": None, "api_key": None, "model": "small", "timeout_s": 4.0, "json_mode": "json_object"},
        "answer": {"base_url": "http://answer/v1", "api_key": None, "model": None, "timeout_s": None, "json_mode": None},
    }
    assert llm_config_for("detection") == LLMConfig(
        base_url="http://shared/v1", api_key="shared-key", model="small", timeout_s=4.0, json_mode="json_object"
    )
    assert llm_config_for("answer") == LLMConfig(
        base_url="http://answer/v1", api_key="shared-key", model="big", timeout_s=30.0, json_mode="json_schema"
    )
    # a purpose missing from LLM_PURPOSES uses the shared endpoint as is
    assert llm_config_for("suggestions").model == "big"


def test_a_purpose_can_have_an_endpoint_when_the_shared_one_is_unset(settings):
    settings.LLM = {"base_url": None, "api_key": None, "model": None, "timeout_s": None, "json_mode": None}
    settings.LLM_PURPOSES = {"detection": {"base_url": "http://fast/v1", "model": "tiny"}}
    config = llm_config_for("detection")
    assert config is not None and config.base_url == "http://fast/v1" and config.model == "tiny"
    assert config.api_key  # a placeholder: the openai client refuses an empty key
    assert config.json_mode == "auto" and config.timeout_s > 0 and config.max_tokens is None
    assert llm_config_for("answer") is None


def test_an_unknown_json_mode_is_a_configuration_error(settings):
    settings.LLM = {"base_url": "http://x/v1", "json_mode": "grammar"}
    settings.LLM_PURPOSES = {}
    with pytest.raises(ImproperlyConfigured, match="json_mode"):
        llm_config_for("detection")


def test_max_tokens_comes_from_the_purpose_then_the_shared_setting_then_a_command_override(settings):
    settings.LLM = {"base_url": "http://shared/v1", "max_tokens": 700}
    settings.LLM_PURPOSES = {"detection": {"max_tokens": 300}, "answer": {"max_tokens": None}}
    assert llm_config_for("detection").max_tokens == 300
    assert llm_config_for("answer").max_tokens == 700
    assert llm_config_for("detection", max_tokens=50, model=None).max_tokens == 50  # None = option not given
    assert llm_config_for("detection", model="small").model == "small"


def test_a_non_positive_max_tokens_is_a_configuration_error(settings):
    settings.LLM = {"base_url": "http://x/v1", "max_tokens": -5}
    settings.LLM_PURPOSES = {}
    with pytest.raises(ImproperlyConfigured, match="max_tokens"):
        llm_config_for("answer")
