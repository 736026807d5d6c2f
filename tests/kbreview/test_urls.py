"""API paths the API does not have answer JSON, for any method, with or without a trailing slash."""
import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method,path", [
    ("post", "/api/v1/turns/"), ("post", "/api/nothing"), ("put", "/api/v2/turns"), ("delete", "/api/v1/nope/"),
])
def test_unknown_api_paths_get_a_json_404_not_the_csrf_page(method, path):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)  # as a real client: no CSRF token
    response = getattr(client, method)(path, "{}", content_type="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert path in response.json()["detail"]


def test_a_trailing_slash_is_named_in_the_answer():
    from django.test import Client

    detail = Client().post("/api/v1/turns/", "{}", content_type="application/json").json()["detail"]
    assert "did you mean /api/v1/turns?" in detail
