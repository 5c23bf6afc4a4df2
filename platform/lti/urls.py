from django.urls import URLPattern, URLResolver, path

from lti import register_views, views

app_name = "lti"

urlpatterns: list[URLPattern | URLResolver] = [
    path("jwks.json", views.jwks, name="jwks"),
    path("login/<uuid:registration_uuid>/", views.LoginView.as_view(), name="login"),
    path("login/", views.LoginView.as_view(), name="login-any"),
    path("launch/", views.LaunchView.as_view(), name="launch"),
    path("continue/<str:token>/", views.ContinueView.as_view(), name="continue"),
    path("deep-link/", views.DeepLinkView.as_view(), name="deep-link"),
    path("deep-link/answer/<str:token>/", views.DeepLinkAnswerView.as_view(), name="dl-answer"),
    path("register/<str:token>/", register_views.RegisterView.as_view(), name="register"),
    path("canvas.json", register_views.canvas_configuration, name="canvas-json"),
]
