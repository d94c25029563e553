from palui.recall_server.run import main

raise SystemExit(main())
