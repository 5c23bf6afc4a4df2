from django.urls import URLPattern, URLResolver, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api import views

app_name = "api"

urlpatterns: list[URLPattern | URLResolver] = [
    path("exercises/", views.ExerciseListApi.as_view(), name="exercise-list"),
    path("exercises/<slug:slug>/", views.ExerciseDetailApi.as_view(), name="exercise-detail"),
    path("submissions/", views.SubmissionListCreateApi.as_view(), name="submission-list"),
    path("submissions/<int:pk>/", views.SubmissionDetailApi.as_view(), name="submission-detail"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]
