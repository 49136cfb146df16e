import sys

from collsim.cli import main

sys.exit(main())
