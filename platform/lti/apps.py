from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    label = "gradlab_lti"
    verbose_name = "LTI 1.3 tool: launches, keys, grade passback"
