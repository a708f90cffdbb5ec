import sys

from robodojo.hardware.x5_bus.server import main

sys.exit(main())
