from django.apps import AppConfig


class ConflictsConfig(AppConfig):
    name = "conflicts"
