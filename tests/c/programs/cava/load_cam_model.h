#ifndef CAVA_LOAD_CAM_MODEL_H
#define CAVA_LOAD_CAM_MODEL_H

/* A camera model is a folder of text tables, three numbers a row ('#' lines are comments):
     transform.txt   the 3x3 colour transform (sensor RGB to linear sRGB, white balance
                     folded in) for each white balance the camera has, one after another
     ctrl_points.txt the gamut map's NUM_CTRL_PTS control points
     coefs.txt       their NUM_CTRL_PTS weights, then NUM_COEF_ROWS affine rows (a bias row
                     and one row per input channel)
     tone_map.txt    TONE_MAP_SIZE rows, each channel's response to one byte value
   Each getter returns a cache-aligned array, or NULL after printing why. */
float *get_TsTw(const char *model_dir, int wb_index);
float *get_ctrl_pts(const char *model_dir);
float *get_weights(const char *model_dir);
float *get_coefs(const char *model_dir);
float *get_tone_map(const char *model_dir);

#endif
