# courses takes over web.ExerciseJob (its table was renamed by web.0002, rows kept), then
# adds what the shared claim / lease / sweep helper (common.jobs) needs.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('courses', '0001_initial'),
        ('web', '0002_move_exercisejob_to_courses'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ExerciseJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('validate', 'Validation'), ('regrade', 'Regrade')], max_length=16)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=16)),
                        ('outcome', models.JSONField(blank=True, null=True)),
                        ('error', models.TextField(blank=True, default='')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('exercise', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='courses.exercise')),
                        ('requested_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='courses.exerciseversion')),
                    ],
                    options={
                        'db_table': 'courses_exercisejob',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['exercise', 'kind', 'created_at'], name='job_recent')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.AddField(
            model_name='exercisejob',
            name='attempts',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='exercisejob',
            name='lease_expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name='exercisejob',
            index=models.Index(fields=['status', 'lease_expires_at'], name='job_lease'),
        ),
    ]
