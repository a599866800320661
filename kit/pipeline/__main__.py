import sys

from kit.pipeline.evals import main

sys.exit(main())
