from functools import cache

from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """`?page=N` (and `?page_size=M`, at most 100): {count, next, previous, results}."""

    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100


@cache
def paginated(item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The schema of one page of `item`s (APIViews are not paginated by drf-spectacular
    itself): {count, next, previous, results: [item]}."""
    fields = {
        "count": serializers.IntegerField(),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": item(many=True),
    }
    return type(f"Paginated{item.__name__}", (serializers.Serializer,), fields)
