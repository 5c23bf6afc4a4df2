# The instructor jobs move to the courses app: the table is renamed here, and
# courses.0002 takes the model over in the migration state. No row is lost.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('web', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='ExerciseJob')],
            database_operations=[
                migrations.AlterModelTable(name='ExerciseJob', table='courses_exercisejob'),
            ],
        ),
    ]
