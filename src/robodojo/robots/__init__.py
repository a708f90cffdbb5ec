"""Robot models: URDF parsing and forward kinematics, robot configurations, scene composition."""
