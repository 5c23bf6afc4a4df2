from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("courses", "0009_enrolment_link"),
    ]

    operations = [
        migrations.AddField(
            model_name="exerciseversion",
            name="saved_again_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
